package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// LocalCluster runs raftcat nodes as processes of this machine, so that
// faults are real: SIGKILL, SIGSTOP/SIGCONT, restarts from the data dir.
type LocalCluster struct {
	Bin   string // raftcat binary
	Dir   string // data dirs and logs
	nodes []*localNode
	lab   *netLab // nil: every node on loopback, no network faults
}

type localNode struct {
	name string
	url  string
	args []string // the command line, "ip netns exec NS" first inside a namespace
	log  *os.File

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// StartLocal starts n nodes that form one cluster and waits until every
// node is ready.
func StartLocal(ctx context.Context, bin, dir string, n int, lab *netLab) (*LocalCluster, error) {
	c := &LocalCluster{Bin: bin, Dir: dir, lab: lab}
	http, raftA, gossip, err := addresses(n, lab)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node%d", i+1)
		nd := &localNode{name: name, url: "http://" + http[i]}
		if lab != nil {
			nd.args = []string{"ip", "netns", "exec", lab.ns[i]}
		}
		nd.args = append(nd.args, bin, "serve", "--node-id", name, "--data-dir", filepath.Join(dir, name),
			"--http-addr", http[i], "--raft-addr", raftA[i], "--gossip-addr", gossip[i], "--join", joinList(gossip),
			"--bootstrap-expect", strconv.Itoa(n), "--storage-root", "file://"+filepath.Join(dir, "warehouse"),
			"--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms", "--dead-server-threshold", "0")
		if nd.log, err = os.Create(filepath.Join(dir, name+".log")); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, nd)
		if err := nd.start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// addresses picks each node's HTTP, raft and gossip address: free
// loopback ports, or fixed ports on the node's namespace address.
func addresses(n int, lab *netLab) (http, raftA, gossip []string, err error) {
	if lab != nil {
		for _, ip := range lab.ips {
			http, raftA, gossip = append(http, ip+":8080"), append(raftA, ip+":8300"), append(gossip, ip+":8301")
		}
		return http, raftA, gossip, nil
	}
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, nil, nil, err
	}
	for i := 0; i < n; i++ {
		http = append(http, fmt.Sprintf("127.0.0.1:%d", ports[3*i]))
		raftA = append(raftA, fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]))
		gossip = append(gossip, fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
	}
	return http, raftA, gossip, nil
}

func joinList(addrs []string) string {
	out := ""
	for i, a := range addrs {
		if i > 0 {
			out += ","
		}
		out += a
	}
	return out
}

func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (nd *localNode) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	cmd := exec.Command(nd.args[0], nd.args[1:]...)
	cmd.Stdout, cmd.Stderr = nd.log, nd.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", nd.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	nd.cmd, nd.done, nd.paused = cmd, done, false
	return nil
}

// URLs are the nodes' HTTP base URLs.
func (c *LocalCluster) URLs() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.url
	}
	return out
}

// Names are the node ids.
func (c *LocalCluster) Names() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.name
	}
	return out
}

// Kill sends SIGKILL to node i and waits for it to die.
func (c *LocalCluster) Kill(i int) {
	nd := c.nodes[i]
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts a killed node again from its data dir.
func (c *LocalCluster) Restart(i int) error { return c.nodes[i].start() }

// Pause stops node i (SIGSTOP): it keeps its sockets but answers nothing.
func (c *LocalCluster) Pause(i int) {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	_ = nd.cmd.Process.Signal(syscall.SIGSTOP)
	nd.paused = true
}

// Resume continues a paused node (SIGCONT).
func (c *LocalCluster) Resume(i int) {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	_ = nd.cmd.Process.Signal(syscall.SIGCONT)
	nd.paused = false
}

// Stop kills every node.
func (c *LocalCluster) Stop() {
	for i, nd := range c.nodes {
		nd.mu.Lock()
		running := nd.cmd != nil
		paused := nd.paused
		nd.mu.Unlock()
		if running {
			if paused {
				c.Resume(i)
			}
			select {
			case <-nd.done:
			default:
				c.Kill(i)
			}
		}
		nd.log.Close()
	}
}

// WaitReady waits until every node answers /readyz.
func (c *LocalCluster) WaitReady(ctx context.Context) error { return waitReady(ctx, c.URLs()) }

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
	minority := []int{i}
	if kind == "split" && len(c.nodes) >= 5 {
		minority = append(minority, (i+1+rng.IntN(len(c.nodes)-1))%len(c.nodes))
	}
	var majority []int
	for j := range c.nodes {
		if !slices.Contains(minority, j) {
			majority = append(majority, j)
		}
	}
	heal := func() error {
		for j := range c.nodes {
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
