// Package localcluster runs raftcat nodes as processes of this machine:
// the benchmark's cluster and the chaos drills' cluster, with real
// SIGKILL, SIGSTOP/SIGCONT and restarts from the data dir.
package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raftcat/raftcat/internal/faultfs"
)

// Options says how to start a cluster.
type Options struct {
	Bin   string // raftcat binary
	Dir   string // data dirs, node logs and the file:// warehouse
	Nodes int
	// Hosts, when set, gives each node its own address with fixed ports
	// (HTTP 8080, raft 8300, gossip 8301); otherwise nodes use free
	// loopback ports.
	Hosts []string
	// Wrap, when set, returns a command prefix for node i (for example
	// "ip netns exec NS").
	Wrap func(i int) []string
	// Flags are extra `raftcat serve` flags for every node.
	Flags []string
	// Env is added to every node's environment (for example GOMEMLIMIT).
	Env []string
	// AdminToken, when set, turns authentication on: it is written to
	// AdminTokenFile in Dir, and every node runs with --auth=token
	// --admin-token-file naming it, so that it becomes the token of the
	// metastore admin. Readiness (/readyz) needs no token.
	AdminToken string
	// Secure turns transport security on: a CA made in Dir/tls (TLSDir)
	// signs a certificate for every node, which serves HTTPS, talks to
	// its peers over mutual TLS and encrypts gossip with a key made
	// beside the CA. Node URLs are then https:// (see ClientTLS).
	Secure bool
	// FaultFS puts every node's data directory on a fault filesystem
	// (see disks.go; needs /dev/fuse and root or fusermount3); FaultSeed
	// seeds its torn power cuts.
	FaultFS   bool
	FaultSeed uint64
}

// AdminTokenFile is the file in Options.Dir that holds the admin token.
const AdminTokenFile = "admin.token"

// NewToken returns a random admin token (256 bits, URL-safe base64).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Cluster is a running set of node processes.
type Cluster struct {
	nodes  []*node
	opts   Options
	gossip []string  // gossip addresses of the nodes Start started
	auth   []string  // the authentication flags of every node
	sec    *security // transport security (nil: off)
	// warehouse is the shared warehouse's fault filesystem (nil without
	// Options.FaultFS).
	warehouse *faultfs.FS
}

type node struct {
	name    string
	url     string
	args    []string
	env     []string
	log     *os.File
	dataDir string
	disk    *faultfs.FS // nil without Options.FaultFS

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// Start starts the nodes, which form one cluster through gossip, and
// waits until every node is ready.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	httpA, raftA, gossipA, err := addresses(o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, gossip: gossipA}
	if c.auth, err = authFlags(o); err != nil {
		return nil, err
	}
	if err := c.mountWarehouse(); err != nil {
		return nil, err
	}
	if o.Secure {
		if c.sec, err = newSecurity(o.Dir); err != nil {
			return nil, err
		}
	}
	for i := 0; i < o.Nodes; i++ {
		nd, err := c.newNode(i, httpA[i], raftA[i], gossipA[i])
		if err != nil {
			c.Stop()
			return nil, err
		}
		if o.Wrap != nil {
			nd.args = append(o.Wrap(i), nd.args...)
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

// authFlags writes the admin token file, if the cluster has a token, and
// returns the flags that make the nodes use it.
func authFlags(o Options) ([]string, error) {
	if o.AdminToken == "" {
		return nil, nil
	}
	if len(strings.TrimSpace(o.AdminToken)) < 16 {
		return nil, errors.New("localcluster: the admin token must be at least 16 characters long")
	}
	// Only its owner may read it: it is the key to the whole catalog.
	file := filepath.Join(o.Dir, AdminTokenFile)
	if err := os.WriteFile(file, []byte(o.AdminToken+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := os.Chmod(file, 0o600); err != nil { // a file left by an earlier run keeps its mode
		return nil, err
	}
	return []string{"--auth=token", "--admin-token-file", file}, nil
}

// newNode is node i's process, not started: it joins the nodes Start
// started and opens its log.
func (c *Cluster) newNode(i int, httpA, raftA, gossipA string) (*node, error) {
	o := c.opts
	name := fmt.Sprintf("node%d", i+1)
	nd := &node{name: name, url: "http://" + httpA, env: o.Env, dataDir: filepath.Join(o.Dir, name)}
	nd.args = append(nd.args, o.Bin, "serve", "--node-id", name, "--data-dir", nd.dataDir,
		"--http-addr", httpA, "--raft-addr", raftA, "--gossip-addr", gossipA,
		"--join", strings.Join(c.gossip, ","), "--bootstrap-expect", strconv.Itoa(o.Nodes),
		"--storage-root", "file://"+filepath.Join(o.Dir, "warehouse"))
	nd.args = append(nd.args, c.auth...)
	if c.sec != nil {
		sec, err := c.sec.nodeFlags(name, httpA)
		if err != nil {
			return nil, err
		}
		nd.url = "https://" + httpA
		nd.args = append(nd.args, sec...)
	}
	nd.args = append(nd.args, o.Flags...)
	if err := c.mountDisk(nd); err != nil {
		return nil, err
	}
	var err error
	if nd.log, err = os.Create(filepath.Join(o.Dir, name+".log")); err != nil {
		return nil, err
	}
	return nd, nil
}

func addresses(o Options) (httpA, raftA, gossipA []string, err error) {
	if len(o.Hosts) > 0 {
		for _, ip := range o.Hosts {
			httpA, raftA, gossipA = append(httpA, ip+":8080"), append(raftA, ip+":8300"), append(gossipA, ip+":8301")
		}
		return httpA, raftA, gossipA, nil
	}
	ports, err := FreePorts(3 * o.Nodes)
	if err != nil {
		return nil, nil, nil, err
	}
	for i := 0; i < o.Nodes; i++ {
		httpA = append(httpA, fmt.Sprintf("127.0.0.1:%d", ports[3*i]))
		raftA = append(raftA, fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]))
		gossipA = append(gossipA, fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
	}
	return httpA, raftA, gossipA, nil
}

func (nd *node) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	cmd := exec.Command(nd.args[0], nd.args[1:]...)
	cmd.Stdout, cmd.Stderr = nd.log, nd.log
	if len(nd.env) > 0 {
		cmd.Env = append(os.Environ(), nd.env...)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", nd.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	nd.cmd, nd.done, nd.paused = cmd, done, false
	return nil
}

// Add starts one more node, with an empty data dir, that joins the
// running cluster through gossip; the leader then adds it as a voter and
// brings it up to date (a snapshot, then the log). Add does not wait for
// that: it returns the new node's index once the process runs. Only
// loopback clusters (no Options.Hosts) can grow.
func (c *Cluster) Add() (int, error) {
	if len(c.opts.Hosts) > 0 {
		return 0, fmt.Errorf("localcluster: Add needs loopback ports, not fixed hosts")
	}
	ports, err := FreePorts(3)
	if err != nil {
		return 0, err
	}
	i := len(c.nodes)
	nd, err := c.newNode(i, fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2]))
	if err != nil {
		return 0, err
	}
	if err := nd.start(); err != nil {
		nd.log.Close()
		if nd.disk != nil {
			_ = nd.disk.Unmount()
		}
		return 0, err
	}
	c.nodes = append(c.nodes, nd)
	return i, nil
}

// URLs are the nodes' HTTP base URLs.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.url
	}
	return out
}

// Names are the node ids.
func (c *Cluster) Names() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.name
	}
	return out
}

// Pids are the nodes' current process ids (0 for a node not running).
func (c *Cluster) Pids() []int {
	out := make([]int, len(c.nodes))
	for i, nd := range c.nodes {
		nd.mu.Lock()
		if nd.cmd != nil && nd.cmd.Process != nil {
			out[i] = nd.cmd.Process.Pid
		}
		nd.mu.Unlock()
	}
	return out
}

// Kill sends SIGKILL to node i and waits for it to die.
func (c *Cluster) Kill(i int) {
	nd := c.nodes[i]
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts a killed node again from its data dir.
func (c *Cluster) Restart(i int) error { return c.nodes[i].start() }

// Pause stops node i (SIGSTOP): it keeps its sockets but answers nothing.
func (c *Cluster) Pause(i int) {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	_ = nd.cmd.Process.Signal(syscall.SIGSTOP)
	nd.paused = true
}

// Resume continues a paused node (SIGCONT).
func (c *Cluster) Resume(i int) {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	_ = nd.cmd.Process.Signal(syscall.SIGCONT)
	nd.paused = false
}

// Stop kills every node.
func (c *Cluster) Stop() {
	for i, nd := range c.nodes {
		nd.mu.Lock()
		running, paused := nd.cmd != nil, nd.paused
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
	c.unmountDisks()
}

// WaitReady waits until every node answers /readyz.
func (c *Cluster) WaitReady(ctx context.Context) error {
	return WaitReadyWith(ctx, &http.Client{Timeout: 2 * time.Second, Transport: c.Transport()}, c.URLs())
}

var probe = &http.Client{Timeout: 2 * time.Second}

// Ready reports whether the node at url answers /readyz with 200.
func Ready(url string) bool { return ReadyWith(probe, url) }

// ReadyWith is Ready asking through client (one that trusts a secure
// cluster's CA).
func ReadyWith(client *http.Client, url string) bool {
	resp, err := client.Get(url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady waits until every node answers /readyz.
func WaitReady(ctx context.Context, urls []string) error { return WaitReadyWith(ctx, probe, urls) }

// WaitReadyWith is WaitReady asking through client.
func WaitReadyWith(ctx context.Context, client *http.Client, urls []string) error {
	for _, u := range urls {
		for !ReadyWith(client, u) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s not ready: %w", u, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// GossipAddrs are the gossip addresses of the nodes Start started, which
// another node joins through.
func (c *Cluster) GossipAddrs() []string { return append([]string(nil), c.gossip...) }
