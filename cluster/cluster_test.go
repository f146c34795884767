package cluster_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/snapshot"
)

const ucBase = "/api/2.1/unity-catalog"

// stateBytes serialises a node's local state, so replicas can be compared.
func stateBytes(t *testing.T, nd *testcluster.Node) []byte {
	t.Helper()
	var buf bytes.Buffer
	st, _ := nd.StaleState()
	if err := snapshot.WriteState(&buf, st, snapshot.Header{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitApplied waits until every running node has applied index.
func waitApplied(t *testing.T, nodes []*testcluster.Node, index uint64) {
	t.Helper()
	for _, nd := range nodes {
		if !nd.Up() {
			continue
		}
		testcluster.WaitFor(t, 20*time.Second, fmt.Sprintf("%s applied %d", nd.ID(), index), func() bool {
			return nd.Status().AppliedIndex >= index
		})
	}
}

// requireConverged checks that all running nodes hold byte-identical state.
func requireConverged(t *testing.T, nodes []*testcluster.Node) {
	t.Helper()
	var want []byte
	for _, nd := range nodes {
		if !nd.Up() {
			continue
		}
		got := stateBytes(t, nd)
		if want == nil {
			want = got
		} else if !bytes.Equal(want, got) {
			t.Fatalf("%s state differs from the first node's", nd.ID())
		}
	}
}

func TestThreeNodesFormOneClusterAndSeedCatalog(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	st := leader.Status()
	if len(st.Members) != 3 {
		t.Fatalf("members = %+v, want 3", st.Members)
	}
	for _, m := range st.Members {
		if !m.Voter || m.HTTPAddr == "" || m.RaftAddr == "" || m.Status != "alive" {
			t.Fatalf("member %+v not a live voter with addresses", m)
		}
	}
	for _, nd := range nodes {
		r := testcluster.Do(t, http.MethodGet, nd.URL+ucBase+"/schemas/unity.default", nil, "X-Raftcat-Consistency", "stale")
		if r.Status != http.StatusOK {
			t.Fatalf("%s: seeded schema unity.default: %d %s", nd.ID(), r.Status, r.Raw)
		}
	}
	requireConverged(t, nodes)
}

func TestWritesThroughFollowersReachLeader(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	var last uint64
	for i, f := range testcluster.Followers(nodes, leader) {
		r := testcluster.Do(t, http.MethodPost, f.URL+ucBase+"/catalogs", map[string]any{"name": fmt.Sprintf("cat%d", i)})
		if r.Status != http.StatusOK {
			t.Fatalf("create via follower %s: %d %s", f.ID(), r.Status, r.Raw)
		}
		if got := r.Header.Get("X-Raftcat-Served-By"); got != leader.ID() {
			t.Fatalf("served by %q, want leader %q", got, leader.ID())
		}
		if r.Index() == 0 {
			t.Fatal("write response lacks X-Raftcat-Index")
		}
		last = r.Index()
	}
	// Followers relay requests over a connection each to the leader.
	status := testcluster.Do(t, http.MethodGet, leader.URL+"/v1/cluster", nil)
	relayed := status.Body["relay"].(map[string]any)
	if relayed["requests"].(float64) < 2 || relayed["connections"].(float64) < 1 {
		t.Fatalf("leader's relay counts after two writes through followers: %v", relayed)
	}
	// A linearizable read through any follower sees both writes at once.
	r := testcluster.Do(t, http.MethodGet, nodes[0].URL+ucBase+"/catalogs", nil)
	if n := len(r.Body["catalogs"].([]any)); n != 3 {
		t.Fatalf("catalogs after writes = %d, want 3 (unity, cat0, cat1)", n)
	}
	waitApplied(t, nodes, last)
	requireConverged(t, nodes)
}

func TestLeaderKilledCommitsContinue(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	id := testcluster.CreateManaged(t, nodes[0].URL, nodes[1].URL, "unity", "default", "t1")
	path := testcluster.TablePath("unity", "default", "t1")
	if r := testcluster.Do(t, http.MethodPost, nodes[2].URL+path, testcluster.CommitBody(id, 1, testcluster.StagedName(1, "a"))); r.Status != http.StatusOK {
		t.Fatalf("commit v1: %d %s", r.Status, r.Raw)
	}

	leader.Stop()
	survivors := testcluster.Followers(nodes, leader)
	newLeader := testcluster.Leader(t, survivors)
	if newLeader == leader {
		t.Fatal("stopped node still leads")
	}
	via := testcluster.Followers(survivors, newLeader)[0]
	r := testcluster.Do(t, http.MethodPost, via.URL+path, testcluster.CommitBody(id, 2, testcluster.StagedName(2, "b")))
	if r.Status != http.StatusOK {
		t.Fatalf("commit v2 after failover: %d %s", r.Status, r.Raw)
	}
	if got := r.Body["latest-table-version"]; got != float64(2) {
		t.Fatalf("latest-table-version = %v, want 2", got)
	}

	// The old leader comes back as a follower and catches up.
	leader.Restart(t)
	testcluster.WaitReady(t, leader)
	waitApplied(t, nodes, r.Index())
	load := testcluster.Do(t, http.MethodGet, leader.URL+path, nil, "X-Raftcat-Consistency", "stale")
	if load.Body["latest-table-version"] != float64(2) {
		t.Fatalf("restarted node sees %v, want version 2", load.Body["latest-table-version"])
	}
	requireConverged(t, nodes)
}

func TestFollowerRestartedCatchesUp(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]
	follower.Stop()

	var last uint64
	for i := 0; i < 20; i++ {
		r := testcluster.Do(t, http.MethodPost, leader.URL+ucBase+"/schemas", map[string]any{"name": fmt.Sprintf("s%d", i), "catalog_name": "unity"})
		if r.Status != http.StatusOK {
			t.Fatalf("create schema with one follower down: %d %s", r.Status, r.Raw)
		}
		last = r.Index()
	}
	follower.Restart(t)
	waitApplied(t, nodes, last)
	r := testcluster.Do(t, http.MethodGet, follower.URL+ucBase+"/schemas?catalog_name=unity", nil, "X-Raftcat-Consistency", "stale")
	if n := len(r.Body["schemas"].([]any)); n != 21 {
		t.Fatalf("restarted follower lists %d schemas, want 21", n)
	}
	requireConverged(t, nodes)
}

func TestNoQuorumAnswers503WithRetryAfter(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	others := testcluster.Followers(nodes, leader)
	others[0].Stop()
	others[1].Stop()
	// The lone node loses its leadership once it misses a quorum.
	testcluster.WaitFor(t, 20*time.Second, "leader to step down", func() bool { return !leader.IsLeader() })
	r := testcluster.Do(t, http.MethodPost, leader.URL+testcluster.DeltaBase+"/catalogs/unity/schemas/default/staging-tables", map[string]any{"name": "x"})
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("without quorum: %d Retry-After=%q %s", r.Status, r.Header.Get("Retry-After"), r.Raw)
	}
	errBody, _ := r.Body["error"].(map[string]any)
	if errBody == nil || errBody["code"] != float64(503) {
		t.Fatalf("503 not in the Delta error envelope: %s", r.Raw)
	}
	uc := testcluster.Do(t, http.MethodGet, leader.URL+ucBase+"/catalogs", nil)
	if uc.Status != http.StatusServiceUnavailable || uc.Body["error_code"] != "UNAVAILABLE" {
		t.Fatalf("UC REST without quorum: %d %s", uc.Status, uc.Raw)
	}
	// A stale read is still served from local state.
	stale := testcluster.Do(t, http.MethodGet, leader.URL+ucBase+"/catalogs", nil, "X-Raftcat-Consistency", "stale")
	if stale.Status != http.StatusOK {
		t.Fatalf("stale read without quorum: %d %s", stale.Status, stale.Raw)
	}
}

func TestNodeRestartKeepsStateAndRejoins(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	testcluster.Leader(t, nodes)
	r := testcluster.Do(t, http.MethodPost, nodes[1].URL+ucBase+"/catalogs", map[string]any{"name": "kept"})
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	waitApplied(t, nodes, r.Index())
	for _, nd := range nodes {
		nd.Stop()
	}
	for _, nd := range nodes {
		nd.Restart(t, nodes[0].GossipAddr())
	}
	testcluster.Leader(t, nodes)
	testcluster.WaitReady(t, nodes...)
	got := testcluster.Do(t, http.MethodGet, nodes[2].URL+ucBase+"/catalogs/kept", nil)
	if got.Status != http.StatusOK {
		t.Fatalf("catalog after full restart: %d %s", got.Status, got.Raw)
	}
	requireConverged(t, nodes)
}

func TestNewNodeJoinsAsVoter(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	r := testcluster.Do(t, http.MethodPost, leader.URL+ucBase+"/catalogs", map[string]any{"name": "before_join"})
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	fourth := testcluster.Add(t, nodes, "node4", 3, testcluster.Options{})
	testcluster.WaitFor(t, 30*time.Second, "node4 to be a voter", func() bool {
		for _, m := range leader.Status().Members {
			if m.ID == "node4" && m.Voter {
				return true
			}
		}
		return false
	})
	testcluster.WaitReady(t, fourth)
	waitApplied(t, []*testcluster.Node{fourth}, r.Index())
	got := testcluster.Do(t, http.MethodGet, fourth.URL+ucBase+"/catalogs/before_join", nil, "X-Raftcat-Consistency", "stale")
	if got.Status != http.StatusOK {
		t.Fatalf("joined node lacks earlier state: %d %s", got.Status, got.Raw)
	}
	// Writes through the new node reach the leader.
	w := testcluster.Do(t, http.MethodPost, fourth.URL+ucBase+"/catalogs", map[string]any{"name": "after_join"})
	if w.Status != http.StatusOK {
		t.Fatalf("write via node4: %d %s", w.Status, w.Raw)
	}
	waitApplied(t, append(nodes, fourth), w.Index())
	requireConverged(t, append(nodes, fourth))
}
