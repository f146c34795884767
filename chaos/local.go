package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/raftcat/raftcat/internal/localcluster"
)

// LocalCluster runs raftcat nodes as processes of this machine, so that
// faults are real: SIGKILL, SIGSTOP/SIGCONT, restarts from the data dir,
// with network namespaces, partitions, and with fault filesystems, power
// cuts and failing disks.
type LocalCluster struct {
	*localcluster.Cluster
	lab   *netLab // nil: every node on loopback, no network faults
	disks bool    // every data directory on a fault filesystem: the disk fault kinds
	dir   string  // where the node logs are
	// touched is, per node, the last fault that stopped, restarted or
	// failed it: a node that exits by itself later is told of there.
	touched []*Fault
	// logOff is, per node, the size of its log when it last started, so
	// that why it exited is read from what its last process wrote.
	logOff []int64
	// revived is set for a node the drill restarted after it exited by
	// itself; leftDown, for one that then exited again, says why: it is
	// not restarted again until a fault touches it.
	revived  []bool
	leftDown []string
}

// drillFlags shorten failure detection so a drill sees many elections.
var drillFlags = []string{"--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms",
	"--dead-server-threshold", "0"}

// StartLocal starts cfg.Nodes nodes that form one cluster and waits until
// every node is ready; with an admin token, every node runs with
// --auth=token; with cfg.Secure, with TLS, mutual TLS between nodes and
// encrypted gossip; with disks, on fault filesystems seeded by cfg.Seed;
// with cfg.LogStore, with that raft log store.
func StartLocal(ctx context.Context, cfg Config, lab *netLab, adminToken string, disks bool) (*LocalCluster, error) {
	o := localcluster.Options{Bin: cfg.Bin, Dir: cfg.Out, Nodes: cfg.Nodes, Flags: drillFlags, AdminToken: adminToken,
		Secure: cfg.Secure, FaultFS: disks, FaultSeed: cfg.Seed}
	if cfg.LogStore != "" {
		o.Flags = append(slices.Clone(drillFlags), "--raft-log-store", cfg.LogStore)
	}
	if lab != nil {
		o.Hosts = lab.ips
		o.Wrap = lab.nodeCommand
	}
	cl, err := localcluster.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	return &LocalCluster{Cluster: cl, lab: lab, disks: disks, dir: cfg.Out, touched: make([]*Fault, cfg.Nodes),
		logOff: make([]int64, cfg.Nodes), revived: make([]bool, cfg.Nodes), leftDown: make([]string, cfg.Nodes)}, nil
}

// LeaderIndex returns the index of the node the others see as leader, or -1.
func (c *LocalCluster) LeaderIndex() int { return leaderIndex(c.URLs(), c.Names()) }

// Digests returns every node's "applied index:state digest".
func (c *LocalCluster) Digests() ([]string, error) { return digests(c.URLs()) }

// FaultKinds are the faults this cluster can be given.
func (c *LocalCluster) FaultKinds() []string {
	kinds := []string{"kill", "pause"}
	if c.lab != nil {
		kinds = append(kinds, "partition", "split")
		if c.lab.netem {
			kinds = append(kinds, "latency")
		}
	}
	if c.disks {
		kinds = append(kinds, DiskFaultKinds...)
	}
	return kinds
}

// inject starts fault f on node i and returns what heals it.
func (c *LocalCluster) inject(f *Fault, i int, rng *rand.Rand) (func() error, error) {
	c.touch(f, i)
	switch f.Kind {
	case "kill":
		c.Kill(i)
		return func() error { return c.restart(i) }, nil
	case "pause":
		c.Pause(i)
		return func() error { c.Resume(i); return nil }, nil
	case "latency":
		return func() error { c.lab.heal(i); return nil }, c.lab.delay(i, 150)
	case "partition", "split":
		return c.partition(f.Kind, i, rng)
	}
	return c.injectDisk(f, i, rng)
}

// partition cuts node i (for a split in a five-node cluster, it and one
// more) off from the others.
func (c *LocalCluster) partition(kind string, i int, rng *rand.Rand) (func() error, error) {
	n := len(c.URLs())
	minority := []int{i}
	if kind == "split" && n >= 5 {
		minority = append(minority, (i+1+rng.IntN(n-1))%n)
	}
	var majority []int
	for j := 0; j < n; j++ {
		if !slices.Contains(minority, j) {
			majority = append(majority, j)
		}
	}
	heal := func() error {
		for j := 0; j < n; j++ {
			c.lab.heal(j)
		}
		return nil
	}
	for _, m := range minority {
		if err := c.lab.cut(m, majority); err != nil {
			return heal, err
		}
	}
	return heal, nil
}

// touch notes that fault f is about to stop, restart or fail node i.
func (c *LocalCluster) touch(f *Fault, i int) {
	c.touched[i], c.revived[i], c.leftDown[i] = f, false, ""
}

// restart starts node i again from its data dir, noting where its log
// stands.
func (c *LocalCluster) restart(i int) error {
	if fi, err := os.Stat(c.logPath(i)); err == nil {
		c.logOff[i] = fi.Size()
	}
	return c.Restart(i)
}

func (c *LocalCluster) logPath(i int) string { return filepath.Join(c.dir, c.Names()[i]+".log") }

// reviveExited restarts every node that exited by itself since the last
// fault was healed (a node that refused to start on damaged data, say),
// and adds what it did to the outcome of the fault that last touched it.
// A node that exits by itself again is left down: the error names those.
func (c *LocalCluster) reviveExited(log io.Writer) error {
	var down []string
	for i, name := range c.Names() {
		if c.leftDown[i] == "" && !c.Running(i) {
			c.revive(i, log)
		}
		if c.leftDown[i] != "" {
			down = append(down, name+" ("+c.leftDown[i]+")")
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("left down after exiting by itself twice: %s", strings.Join(down, ", "))
	}
	return nil
}

// revive restarts node i, which exited by itself, unless the drill had
// restarted it after it did so before: that one is left down.
func (c *LocalCluster) revive(i int, log io.Writer) {
	out, code := c.exitOutcome(i)
	next, action := "then "+out+", restarted", "restarting it"
	if c.revived[i] {
		c.leftDown[i] = out
		next, action = "then "+out+" again: left down", "leaving it down"
	}
	fmt.Fprintf(log, "chaos: %s exited by itself (%s); %s\n", c.Names()[i], out, action)
	if f := c.touched[i]; f != nil {
		f.Outcome = joinOutcome(f.Outcome, next)
		if f.ExitStatus == nil {
			f.ExitStatus = &code
		}
	}
	if c.leftDown[i] != "" {
		return
	}
	c.revived[i] = true
	if err := c.restart(i); err != nil {
		fmt.Fprintf(log, "chaos: restarting %s: %v\n", c.Names()[i], err)
	}
}
