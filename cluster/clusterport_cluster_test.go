package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/tlsutil"
)

// tlsNode is a node with mutual TLS on its cluster port, its log kept.
type tlsNode struct {
	*Node
	logged        *logBuffer
	cert, keyFile string
}

// openTLSNode opens a node presenting a new node certificate of ca and
// trusting caFile; tune, if set, adjusts its configuration.
func openTLSNode(t *testing.T, ca *testCA, caFile, id string, expect int, join []string, tune func(*Config)) *tlsNode {
	t.Helper()
	log, logs := logger()
	sec, cert, key := ca.node(t, id, caFile, log)
	dir := t.TempDir()
	cfg := Config{NodeID: id, DataDir: dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0", Join: join,
		BootstrapExpect: expect, StorageRoot: "file://" + dir + "/warehouse", HeartbeatTimeout: 500 * time.Millisecond,
		ElectionTimeout: 500 * time.Millisecond, Logger: log, Metrics: prometheus.NewRegistry(), TLS: sec}
	if tune != nil {
		tune(&cfg)
	}
	n, err := Open(cfg)
	if err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
	t.Cleanup(func() { n.Shutdown() })
	return &tlsNode{Node: n, logged: logs, cert: cert, keyFile: key}
}

// startTLSCluster starts n nodes of ca that form one cluster.
func startTLSCluster(t *testing.T, ca *testCA, n int, tune func(*Config)) []*tlsNode {
	t.Helper()
	nodes := make([]*tlsNode, n)
	var join []string
	for i := range nodes {
		nodes[i] = openTLSNode(t, ca, ca.caFile(), fmt.Sprintf("node%d", i+1), n, join, tune)
		join = []string{nodes[0].GossipAddr()}
	}
	return nodes
}

// leaderOf waits for a node of nodes to lead with its term established.
func leaderOf(t *testing.T, nodes []*tlsNode) *tlsNode {
	t.Helper()
	var leader *tlsNode
	waitUntil(t, 30*time.Second, "an established leader", func() bool {
		for _, n := range nodes {
			if !n.stopped() && n.established() {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

// createCatalogs proposes k catalogs named prefix0.. on the leader and
// returns the last one's index.
func createCatalogs(t *testing.T, leader *tlsNode, prefix string, k int) uint64 {
	t.Helper()
	var index uint64
	for i := range k {
		name := fmt.Sprintf("%s%d", prefix, i)
		res, idx, err := leader.Propose(context.Background(), &fsm.CreateCatalog{ID: "id-" + name, Name: name})
		if err != nil || res.Err != nil {
			t.Fatalf("create catalog %s: %v %v", name, err, res.Err)
		}
		index = idx
	}
	return index
}

// waitAllApplied waits until every running node has applied index and
// holds the catalog name.
func waitAllApplied(t *testing.T, nodes []*tlsNode, index uint64, name string) {
	t.Helper()
	for _, n := range nodes {
		if n.stopped() {
			continue
		}
		waitUntil(t, 20*time.Second, fmt.Sprintf("%s to apply %d", n.ID(), index), func() bool {
			st, applied := n.StaleState()
			return applied >= index && hasCatalog(st, name)
		})
	}
}

// A three-node cluster with mutual TLS forms, replicates and elects; its
// cluster port refuses raft spoken in plaintext, serves a certificate
// rotated on disk from the next handshake, and carries peer HTTP between
// nodes but not from a certificate of another CA.
func TestMutualTLSCluster(t *testing.T) {
	ca := newTestCA(t, "cluster")
	nodes := startTLSCluster(t, ca, 3, nil)
	leader := leaderOf(t, nodes)
	for _, n := range nodes {
		waitUntil(t, 20*time.Second, n.ID()+" to see three voters", func() bool { return len(n.Status().Members) == 3 })
	}
	waitAllApplied(t, nodes, createCatalogs(t, leader, "first", 3), "first2")
	follower := otherThan(nodes, leader)[0]
	waitUntil(t, 10*time.Second, follower.ID()+" to log the leader's raft connection with its certificate's name", func() bool {
		return len(follower.logged.Lines("accepted a raft connection", "peer="+leader.ID())) > 0
	})

	t.Run("plaintext raft refused", func(t *testing.T) { plaintextRefused(t, nodes, follower) })
	t.Run("certificate rotated on disk", func(t *testing.T) { rotated(t, ca, nodes, follower) })
	t.Run("peer HTTP", func(t *testing.T) { peerHTTP(t, ca, nodes) })
	t.Run("new leader elected", func(t *testing.T) {
		old := leaderOf(t, nodes)
		if err := old.Shutdown(); err != nil {
			t.Fatal(err)
		}
		next := leaderOf(t, nodes)
		waitAllApplied(t, nodes, createCatalogs(t, next, "after", 2), "after1")
	})
}

func otherThan(nodes []*tlsNode, n *tlsNode) []*tlsNode {
	var out []*tlsNode
	for _, o := range nodes {
		if o != n {
			out = append(out, o)
		}
	}
	return out
}

// plaintextRefused sends a raft vote request in plaintext (raft's stock
// transport) to a node: it is refused and logged, and the cluster goes on.
func plaintextRefused(t *testing.T, nodes []*tlsNode, target *tlsNode) {
	if _, err := requestVote(oldTransport(t), target.RaftAddr()); err == nil {
		t.Fatal("a plaintext raft request got an answer")
	}
	waitUntil(t, 10*time.Second, "the refusal counted and logged", func() bool {
		return counted(t, target.metrics.connRefused, refusedPlaintext.label) == 1 &&
			len(target.logged.Lines("level=WARN", "refused a cluster connection", "remote=127.0.0.1:", refusedPlaintext.words)) == 1
	})
	waitAllApplied(t, nodes, createCatalogs(t, leaderOf(t, nodes), "plain", 2), "plain1")
}

// rotated writes a new certificate and key over one node's files: the
// next handshake with the node presents it, and the cluster goes on.
func rotated(t *testing.T, ca *testCA, nodes []*tlsNode, target *tlsNode) {
	client := ca.client(t, "checker", tlsutil.NodeCert, tlsutil.DefaultCertLifetime, ca)
	before := servedSerial(t, target, client)
	cert, key := ca.files(t, t.TempDir(), target.ID(), tlsutil.NodeCert, tlsutil.DefaultCertLifetime)
	want := fileSerial(t, cert)
	if err := os.Rename(key, target.keyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cert, target.cert); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, target, client); got == before || got != want {
		t.Fatalf("served serial %s after rotation (before %s), want the new certificate's %s", got, before, want)
	}
	waitAllApplied(t, nodes, createCatalogs(t, leaderOf(t, nodes), "rotated", 2), "rotated1")
}

// servedSerial is the serial of the certificate n's cluster port presents.
func servedSerial(t *testing.T, n *tlsNode, cfg *tls.Config) string {
	t.Helper()
	c, err := tls.Dial("tcp", n.RaftAddr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func fileSerial(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// peerHTTP dials the leader's peer address from a follower and passes
// bytes both ways; a client with a certificate of another CA gets nothing
// through to the leader's peer listener.
func peerHTTP(t *testing.T, ca *testCA, nodes []*tlsNode) {
	leader := leaderOf(t, nodes)
	from := otherThan(nodes, leader)[0]
	addr, err := from.LeaderPeerAddr()
	if err != nil || addr != leader.RaftAddr() {
		t.Fatalf("leader's peer address %q %v, want %s", addr, err, leader.RaftAddr())
	}
	other := newTestCA(t, "other")
	intruder := dialTLS(other.client(t, "intruder", tlsutil.NodeCert, tlsutil.DefaultCertLifetime, ca))
	if err := intruder(addr); err == nil {
		t.Fatal("a certificate of another CA got an answer")
	}
	waitUntil(t, 10*time.Second, "the intruder refused", func() bool {
		return counted(t, leader.metrics.connRefused, refusedUnknownCA.label) == 1
	})
	c, err := from.DialPeer(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := acceptOne(t, leader.PeerListener())
	if name := peerName(in); name != from.ID() {
		t.Fatalf("first peer connection through came from %q, want %s", name, from.ID())
	}
	exchange(t, c, in)
	if _, err := other.nodeFor(t, "outsider").dialPeer(context.Background(), addr); err == nil {
		t.Fatal("a node of another CA dialled the leader's peer port")
	}
}

// nodeFor is a cluster port of a node of c, not in any cluster.
func (c *testCA) nodeFor(t *testing.T, name string) *streamLayer {
	t.Helper()
	sec, _, _ := c.node(t, name, c.caFile(), nil)
	s, _ := openPort(t, sec, time.Second)
	return s
}

// A node whose certificate another CA signed joins gossip but never
// becomes a voter or gets a raft entry: the leader checks its cluster port
// before adding it and does not, the members refuse its connections
// (logging them), and the cluster keeps committing.
func TestNodeOfAnotherCANeverGetsEntries(t *testing.T) {
	ca, other := newTestCA(t, "cluster"), newTestCA(t, "other")
	nodes := startTLSCluster(t, ca, 3, nil)
	leader := leaderOf(t, nodes)
	// The intruder trusts the cluster's CA (its certificate is public);
	// its own certificate is another CA's.
	intruder := openTLSNode(t, other, bundle(t, ca, other), "intruder", 3, []string{nodes[0].GossipAddr()}, nil)
	// Gossip let it in; the leader checks its cluster port before making
	// it a voter, and does not.
	waitUntil(t, 30*time.Second, "the leader to refuse to add the intruder", func() bool {
		return len(leader.logged.Lines("not adding a voter", intruder.RaftAddr(), "certificate signed by unknown authority")) > 0
	})
	for _, n := range nodes {
		if _, err := requestVote(intruder.trans, n.RaftAddr()); err == nil {
			t.Fatalf("%s answered the intruder's vote request", n.ID())
		}
		waitUntil(t, 10*time.Second, n.ID()+" to refuse the intruder", func() bool {
			return len(n.logged.Lines("refused a cluster connection", refusedUnknownCA.words, "peer=intruder")) == 1
		})
	}
	waitAllApplied(t, nodes, createCatalogs(t, leader, "without", 5), "without4")
	cf := leader.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		t.Fatal(err)
	}
	for _, srv := range cf.Configuration().Servers {
		if srv.ID == "intruder" {
			t.Fatalf("the intruder is in the raft configuration: %+v", cf.Configuration().Servers)
		}
	}
	if last := intruder.raft.LastIndex(); last != 0 {
		t.Fatalf("the intruder's raft log reached index %d", last)
	}
	if st, _ := intruder.StaleState(); st.Initialized() {
		t.Fatal("the intruder holds the catalog")
	}
}

// A node joining after the leader compacted its log catches up by a
// snapshot the leader installs over mutual TLS.
func TestSnapshotInstalledOverMutualTLS(t *testing.T) {
	ca := newTestCA(t, "cluster")
	tune := func(c *Config) {
		c.SnapshotThreshold, c.TrailingLogs, c.SnapshotInterval = 8, 4, 50*time.Millisecond
	}
	nodes := startTLSCluster(t, ca, 3, tune)
	leader := leaderOf(t, nodes)
	last := createCatalogs(t, leader, "snap", 30)
	waitUntil(t, 20*time.Second, "the leader to compact its log", func() bool {
		first, err := leader.logs.FirstIndex()
		return err == nil && first > 1
	})
	fourth := openTLSNode(t, ca, ca.caFile(), "node4", 3, []string{nodes[0].GossipAddr()}, tune)
	waitAllApplied(t, []*tlsNode{fourth}, last, "snap29")
	if got := fourth.Status().SnapshotRestores; got == 0 {
		t.Fatal("node4 caught up without installing a snapshot")
	}
}
