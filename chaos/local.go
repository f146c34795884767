package chaos

import (
	"context"
	"math/rand/v2"
	"slices"

	"github.com/raftcat/raftcat/internal/localcluster"
)

// LocalCluster runs raftcat nodes as processes of this machine, so that
// faults are real: SIGKILL, SIGSTOP/SIGCONT, restarts from the data dir,
// and, with network namespaces, partitions.
type LocalCluster struct {
	*localcluster.Cluster
	lab *netLab // nil: every node on loopback, no network faults
}

// drillFlags shorten failure detection so a drill sees many elections.
var drillFlags = []string{"--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms",
	"--dead-server-threshold", "0"}

// StartLocal starts n nodes that form one cluster and waits until every
// node is ready; with an admin token, every node runs with --auth=token,
// and secure, with TLS, mutual TLS between nodes and encrypted gossip.
func StartLocal(ctx context.Context, bin, dir string, n int, lab *netLab, adminToken string, secure bool) (*LocalCluster, error) {
	o := localcluster.Options{Bin: bin, Dir: dir, Nodes: n, Flags: drillFlags, AdminToken: adminToken, Secure: secure}
	if lab != nil {
		o.Hosts = lab.ips
		o.Wrap = func(i int) []string { return []string{"ip", "netns", "exec", lab.ns[i]} }
	}
	cl, err := localcluster.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	return &LocalCluster{Cluster: cl, lab: lab}, nil
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
	return kinds
}

// inject starts a fault on node i and returns what heals it.
func (c *LocalCluster) inject(kind string, i int, rng *rand.Rand) (func() error, error) {
	switch kind {
	case "kill":
		c.Kill(i)
		return func() error { return c.Restart(i) }, nil
	case "pause":
		c.Pause(i)
		return func() error { c.Resume(i); return nil }, nil
	case "latency":
		return func() error { c.lab.heal(i); return nil }, c.lab.delay(i, 150)
	}
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
