package cluster_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const gossipKeysPath = "/v1/cluster/gossip-keys"

// nodeLogs keeps each node's log, for tests to read while nodes run.
type nodeLogs struct {
	mu  sync.Mutex
	buf map[string]*bytes.Buffer
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func newNodeLogs() *nodeLogs { return &nodeLogs{buf: map[string]*bytes.Buffer{}} }

// logger is a node's logger (testcluster.Options.Logger); a restarted
// node goes on writing to the same log.
func (l *nodeLogs) logger(id string) *slog.Logger {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf[id] == nil {
		l.buf[id] = &bytes.Buffer{}
	}
	return slog.New(slog.NewTextHandler(lockedWriter{&l.mu, l.buf[id]}, nil))
}

// of is what a node logged so far.
func (l *nodeLogs) of(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf[id] == nil {
		return ""
	}
	return l.buf[id].String()
}

// linesWith are a node's log lines that contain s.
func (l *nodeLogs) linesWith(id, s string) []string {
	var out []string
	for _, line := range strings.Split(l.of(id), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

func newGossipKey(t *testing.T) (string, string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b), clusterapi.KeyFingerprint(b)
}

// gossipKeys is a node's listing of the gossip keys.
func gossipKeys(t *testing.T, nd *testcluster.Node) clusterapi.GossipKeys {
	t.Helper()
	r := testcluster.Do(t, http.MethodGet, nd.URL+gossipKeysPath, nil)
	var out clusterapi.GossipKeys
	if err := json.Unmarshal(r.Raw, &out); r.Status != http.StatusOK || err != nil {
		t.Fatalf("GET %s: %d %s", gossipKeysPath, r.Status, r.Raw)
	}
	return out
}

// keyOf is a key's entry in a listing (zero if it is not listed).
func keyOf(l clusterapi.GossipKeys, fp string) clusterapi.GossipKey {
	for _, k := range l.Keys {
		if k.Fingerprint == fp {
			return k
		}
	}
	return clusterapi.GossipKey{}
}

// changeKey posts one rotation step and returns the answer.
func changeKey(t *testing.T, nd *testcluster.Node, op, key string) testcluster.Response {
	t.Helper()
	return testcluster.Do(t, http.MethodPost, nd.URL+gossipKeysPath, map[string]string{"op": op, "key": key})
}

// waitKeys waits until the listing through nd says what cond wants.
func waitKeys(t *testing.T, nd *testcluster.Node, what string, cond func(clusterapi.GossipKeys) bool) {
	t.Helper()
	testcluster.WaitFor(t, 30*time.Second, what, func() bool { return cond(gossipKeys(t, nd)) })
}

// membershipWatch records every time a node's gossip view lacks an alive
// peer, from start until stop.
type membershipWatch struct {
	stop, done chan struct{}
	lost       []string
}

func watchMembership(nodes []*testcluster.Node) *membershipWatch {
	w := &membershipWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			for _, nd := range nodes {
				if lost := notAlive(nd, nodes); lost != "" {
					w.lost = append(w.lost, lost)
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

// notAlive names a node nd's gossip does not see alive ("" if none).
func notAlive(nd *testcluster.Node, nodes []*testcluster.Node) string {
	seen := map[string]string{}
	for _, g := range nd.Status().Gossip {
		seen[g.ID] = g.Status
	}
	for _, other := range nodes {
		if st := seen[other.ID()]; st != "alive" {
			return fmt.Sprintf("%s sees %s as %q", nd.ID(), other.ID(), st)
		}
	}
	return ""
}

func (w *membershipWatch) end() []string {
	close(w.stop)
	<-w.done
	return w.lost
}

// A node started with a key the cluster does not hold never joins its
// gossip: the node it tries to join logs, as a warning, that no installed
// key could decrypt its messages and where they came from, and the
// cluster goes on serving. Started again with the cluster's key, it joins.
func TestNodeWithWrongGossipKeyNeverJoins(t *testing.T) {
	logs := newNodeLogs()
	key, _ := newGossipKey(t)
	wrong, _ := newGossipKey(t)
	nodes := testcluster.Start(t, 3, testcluster.Options{GossipKey: key, Logger: logs.logger})
	leader := testcluster.Leader(t, nodes)
	stranger := testcluster.Add(t, nodes, "node4", 3, testcluster.Options{GossipKey: wrong, Logger: logs.logger})
	const refused = "no installed keys could decrypt the message"
	testcluster.WaitFor(t, 30*time.Second, "node1 to refuse node4's messages three times", func() bool {
		return len(logs.linesWith("node1", refused)) >= 3
	})
	line := logs.linesWith("node1", refused)[0]
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "from=127.0.0.1:") || !strings.Contains(line, "gossip key is wrong") {
		t.Fatalf("the refusal is not a warning naming the sender: %s", line)
	}
	for _, nd := range nodes {
		if lost := notAlive(nd, nodes); lost != "" || len(nd.Status().Gossip) != 3 || len(nd.Status().Members) != 3 {
			t.Fatalf("%s; gossip %+v, raft %+v", lost, nd.Status().Gossip, nd.Status().Members)
		}
	}
	if g := stranger.Status().Gossip; len(g) != 1 || g[0].ID != "node4" {
		t.Fatalf("node4 sees %+v", g)
	}
	if r := testcluster.Do(t, http.MethodPost, nodes[1].URL+ucBase+"/catalogs", map[string]any{"name": "still_serving"}); r.Status != http.StatusOK {
		t.Fatalf("write while node4 knocks: %d %s", r.Status, r.Raw)
	}

	stranger.Stop()
	if err := os.WriteFile(stranger.GossipKeyFile(), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	stranger.Restart(t)
	testcluster.WaitFor(t, 30*time.Second, "node4 to be a voter", func() bool {
		return slices.ContainsFunc(leader.Status().Members, func(m clusterapi.Member) bool { return m.ID == "node4" && m.Voter })
	})
}

// Rotation on a running cluster, through the admin API of a follower:
// install a new key, use it, remove the old one. No node drops out of any
// node's gossip and no message is refused meanwhile; steps that would cut
// nodes off are refused. Every node keeps the keyring, so a node
// restarted with only the old key file starts with the new key and
// rejoins.
func TestGossipKeyRotationLosesNoNode(t *testing.T) {
	logs := newNodeLogs()
	oldKey, oldFP := newGossipKey(t)
	newKey, newFP := newGossipKey(t)
	nodes := testcluster.Start(t, 3, testcluster.Options{GossipKey: oldKey, Logger: logs.logger})
	leader := testcluster.Leader(t, nodes)
	via := testcluster.Followers(nodes, leader)[0]
	waitKeys(t, via, "every node to gossip its key", func(l clusterapi.GossipKeys) bool {
		k := keyOf(l, oldFP)
		return l.Encrypted && len(l.Keys) == 1 && k.Installed == 3 && k.Primary == 3 && k.Alive == 3 && !k.Replicated
	})
	watch := watchMembership(nodes)

	if r := changeKey(t, via, fsm.GossipKeyUse, newKey); r.Status != http.StatusBadRequest || !strings.Contains(r.Text(), "not installed") {
		t.Fatalf("use of a key no node has: %d %s", r.Status, r.Raw)
	}
	r := changeKey(t, via, fsm.GossipKeyInstall, newKey)
	if k := keyOf(decodeKeys(t, r), newFP); r.Status != http.StatusOK || !k.Replicated || k.ReplicatedPrimary {
		t.Fatalf("install: %d %s", r.Status, r.Raw)
	}
	waitKeys(t, via, "every node to install the new key", func(l clusterapi.GossipKeys) bool { return keyOf(l, newFP).Installed == 3 })
	if r := changeKey(t, via, fsm.GossipKeyRemove, oldKey); r.Status != http.StatusConflict || !strings.Contains(r.Text(), "primary key of 3 of 3") {
		t.Fatalf("removal of the key every node encrypts with: %d %s", r.Status, r.Raw)
	}
	if r := changeKey(t, via, fsm.GossipKeyUse, newKey); r.Status != http.StatusOK || !keyOf(decodeKeys(t, r), newFP).ReplicatedPrimary {
		t.Fatalf("use: %d %s", r.Status, r.Raw)
	}
	waitKeys(t, via, "every node to encrypt with the new key", func(l clusterapi.GossipKeys) bool { return keyOf(l, newFP).Primary == 3 })
	if r := changeKey(t, via, fsm.GossipKeyRemove, oldKey); r.Status != http.StatusOK {
		t.Fatalf("remove: %d %s", r.Status, r.Raw)
	}
	waitKeys(t, via, "every node to drop the old key", func(l clusterapi.GossipKeys) bool {
		return len(l.Keys) == 1 && keyOf(l, newFP) == clusterapi.GossipKey{Fingerprint: newFP, Installed: 3, Primary: 3, Alive: 3,
			Replicated: true, ReplicatedPrimary: true}
	})
	if lost := watch.end(); len(lost) > 0 {
		t.Fatalf("nodes dropped out of gossip during the rotation: %v", lost[:min(len(lost), 5)])
	}
	for _, nd := range nodes {
		if refused := logs.linesWith(nd.ID(), "gossip refused a message"); len(refused) > 0 {
			t.Fatalf("%s refused gossip during the rotation: %s", nd.ID(), refused[0])
		}
		requireKeptKeyring(t, nd, newKey)
	}
	if strings.Contains(logs.of("node1")+logs.of("node2")+logs.of("node3"), newKey) {
		t.Fatal("a key was logged")
	}

	follower := testcluster.Followers(nodes, leader)[1]
	follower.Stop()
	follower.Restart(t)
	started := logs.linesWith(follower.ID(), "gossip is encrypted")
	if want := fmt.Sprintf("primary=%s keys=\"[%s %s]\"", newFP, newFP, oldFP); len(started) != 2 || !strings.Contains(started[1], want) {
		t.Fatalf("restarted with the old key file, the node did not start with the kept keyring (%s): %q", want, started)
	}
	testcluster.WaitFor(t, 30*time.Second, "the restarted node back in every node's gossip", func() bool {
		return notAlive(nodes[0], nodes) == "" && notAlive(nodes[1], nodes) == "" && notAlive(nodes[2], nodes) == ""
	})
	testcluster.WaitFor(t, 30*time.Second, "the restarted node to drop the old key again", func() bool {
		return slices.Equal(follower.GossipKeyring(), []string{newKey})
	})
}

func decodeKeys(t *testing.T, r testcluster.Response) clusterapi.GossipKeys {
	t.Helper()
	var out clusterapi.GossipKeys
	if err := json.Unmarshal(r.Raw, &out); err != nil {
		t.Fatalf("%d %s: %v", r.Status, r.Raw, err)
	}
	return out
}

// requireKeptKeyring checks the keyring a node keeps on disk: the given
// keys, readable by its user alone.
func requireKeptKeyring(t *testing.T, nd *testcluster.Node, keys ...string) {
	t.Helper()
	path := filepath.Join(nd.Dir, "gossip.keyring")
	testcluster.WaitFor(t, 10*time.Second, nd.ID()+" to keep the keyring", func() bool {
		var k fsm.GossipKeyring
		b, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(b, &k) == nil && slices.Equal(k.Keys, keys) && k.Primary == keys[0]
	})
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", path, fi.Mode(), err)
	}
}

// A node that cannot keep the keyring on disk (its place is taken by a
// directory) says so in an error, installs the keyring in its gossip all
// the same, and goes on serving.
func TestGossipKeyringThatCannotBeKeptStillApplies(t *testing.T) {
	logs := newNodeLogs()
	oldKey, _ := newGossipKey(t)
	newKey, newFP := newGossipKey(t)
	nodes := testcluster.Start(t, 3, testcluster.Options{GossipKey: oldKey, Logger: logs.logger})
	leader := testcluster.Leader(t, nodes)
	broken := testcluster.Followers(nodes, leader)[0]
	blocker := filepath.Join(broken.Dir, "gossip.keyring")
	if err := os.MkdirAll(filepath.Join(blocker, "occupied"), 0o750); err != nil {
		t.Fatal(err)
	}
	if r := changeKey(t, leader, fsm.GossipKeyInstall, newKey); r.Status != http.StatusOK {
		t.Fatalf("install: %d %s", r.Status, r.Raw)
	}
	waitKeys(t, leader, "every node to install the new key", func(l clusterapi.GossipKeys) bool { return keyOf(l, newFP).Installed == 3 })
	testcluster.WaitFor(t, 10*time.Second, "the node to log that it could not keep the keyring", func() bool {
		return len(logs.linesWith(broken.ID(), "could not keep the gossip keyring on disk")) > 0
	})
	if line := logs.linesWith(broken.ID(), "could not keep the gossip keyring on disk")[0]; !strings.Contains(line, "level=ERROR") || !strings.Contains(line, blocker) {
		t.Fatalf("not an error naming the file: %s", line)
	}
	if !slices.Contains(broken.GossipKeyring(), newKey) {
		t.Fatal("the node did not install the keyring it could not keep")
	}
	for _, nd := range testcluster.Followers(nodes, broken) {
		requireKeptKeyring(t, nd, oldKey, newKey)
	}
	r := testcluster.Do(t, http.MethodPost, broken.URL+ucBase+"/catalogs", map[string]any{"name": "served"})
	if r.Status != http.StatusOK || !broken.Ready() {
		t.Fatalf("write through the node: %d %s", r.Status, r.Raw)
	}
}

// Without gossip encryption there is no keyring to change: the listing
// says so, and a change is refused with what to do.
func TestGossipKeysWithoutEncryption(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	key, _ := newGossipKey(t)
	if l := gossipKeys(t, nodes[0]); l.Encrypted || len(l.Keys) != 0 || l.Alive != 1 {
		t.Fatalf("listing %+v", l)
	}
	r := changeKey(t, nodes[0], fsm.GossipKeyInstall, key)
	if r.Status != http.StatusConflict || !strings.Contains(r.Text(), "Gossip encryption is off") || strings.Contains(r.Text(), key) {
		t.Fatalf("install without encryption: %d %s", r.Status, r.Raw)
	}
	for _, body := range []string{`{"op":"install","key":"c2hvcnQ="}`, `{"op":"rotate","key":"` + key + `"}`, `{"op":"install"}`} {
		r := testcluster.Do(t, http.MethodPost, nodes[0].URL+gossipKeysPath, body)
		if r.Status != http.StatusBadRequest || strings.Contains(r.Text(), key) {
			t.Fatalf("%s: %d %s", body, r.Status, r.Raw)
		}
	}
}

// A node refuses to start with a gossip key file that holds no key.
func TestBadGossipKeyFileRefusesStart(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"short": base64.StdEncoding.EncodeToString([]byte("0123456789")),
		"not base64": "this is not a key", "empty": "\n"} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := cluster.Open(cluster.Config{NodeID: "n", DataDir: t.TempDir(), RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
			BootstrapExpect: 1, DisableReadLease: true, GossipKeyFile: file, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err == nil || !strings.Contains(err.Error(), "16, 24 or 32-byte key") {
			t.Fatalf("%s key file: %v", name, err)
		}
	}
	_, err := cluster.Open(cluster.Config{NodeID: "n", DataDir: t.TempDir(), RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
		BootstrapExpect: 1, DisableReadLease: true, GossipKeyFile: filepath.Join(dir, "missing"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "gossip key file") {
		t.Fatalf("missing key file: %v", err)
	}
}
