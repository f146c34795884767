package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/snapshot"
)

const opsWait = 30 * time.Second

// digestAnswer is the body of GET /v1/cluster/state-digest.
type digestAnswer struct {
	NodeID       string `json:"node_id"`
	AppliedIndex uint64 `json:"applied_index"`
	Digest       string `json:"digest"`
}

// getDigest asks a node for its state digest over HTTP.
func getDigest(t *testing.T, nd *testcluster.Node) digestAnswer {
	t.Helper()
	r := testcluster.Do(t, http.MethodGet, nd.URL+"/v1/cluster/state-digest", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%s state-digest: %d %s", nd.ID(), r.Status, r.Raw)
	}
	var d digestAnswer
	if err := json.Unmarshal(r.Raw, &d); err != nil {
		t.Fatalf("%s state-digest body %q: %v", nd.ID(), r.Raw, err)
	}
	if d.NodeID != nd.ID() || d.Digest == "" {
		t.Fatalf("%s state-digest answer %+v", nd.ID(), d)
	}
	return d
}

// agreedDigest waits until every running node reports the same applied
// index, at least minIndex, and returns the digest they share. Two nodes
// at the same index with different digests fail the test at once.
func agreedDigest(t *testing.T, nodes []*testcluster.Node, minIndex uint64) digestAnswer {
	t.Helper()
	var agreed digestAnswer
	testcluster.WaitFor(t, opsWait, fmt.Sprintf("all nodes at one applied index >= %d", minIndex), func() bool {
		var first *digestAnswer
		for _, nd := range nodes {
			if !nd.Up() {
				continue
			}
			d := getDigest(t, nd)
			if d.AppliedIndex < minIndex {
				return false
			}
			if first == nil {
				first = &d
				continue
			}
			if d.AppliedIndex != first.AppliedIndex {
				return false
			}
			if d.Digest != first.Digest {
				t.Fatalf("at applied index %d %s has digest %s but %s has %s",
					d.AppliedIndex, first.NodeID, first.Digest, d.NodeID, d.Digest)
			}
		}
		agreed = *first
		return true
	})
	return agreed
}

// clusterStatus is GET /v1/cluster of one node.
func clusterStatus(t *testing.T, nd *testcluster.Node) cluster.Status {
	t.Helper()
	r := testcluster.Do(t, http.MethodGet, nd.URL+"/v1/cluster", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%s /v1/cluster: %d %s", nd.ID(), r.Status, r.Raw)
	}
	var st cluster.Status
	if err := json.Unmarshal(r.Raw, &st); err != nil {
		t.Fatalf("%s /v1/cluster body: %v", nd.ID(), err)
	}
	return st
}

// memberIDs lists the ids of the members a node's /v1/cluster shows, sorted.
func memberIDs(t *testing.T, nd *testcluster.Node) []string {
	t.Helper()
	var ids []string
	for _, m := range clusterStatus(t, nd).Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// waitMembers waits until every given node's /v1/cluster lists exactly want.
func waitMembers(t *testing.T, nodes []*testcluster.Node, want ...string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	for _, nd := range nodes {
		testcluster.WaitFor(t, opsWait, fmt.Sprintf("%s to list members %v", nd.ID(), want), func() bool {
			return slices.Equal(memberIDs(t, nd), want)
		})
	}
}

func nodeIDs(nodes []*testcluster.Node) []string {
	var ids []string
	for _, nd := range nodes {
		ids = append(ids, nd.ID())
	}
	return ids
}

// createCatalog creates a catalog through url and returns the write's index.
func createCatalog(t *testing.T, url, name string) uint64 {
	t.Helper()
	r := testcluster.Do(t, http.MethodPost, url+ucBase+"/catalogs", map[string]any{"name": name})
	if r.Status != http.StatusOK || r.Index() == 0 {
		t.Fatalf("create catalog %s via %s: %d %s", name, url, r.Status, r.Raw)
	}
	return r.Index()
}

// createSchema creates a schema through url and returns the write's index.
func createSchema(t *testing.T, url, catalog, name string) uint64 {
	t.Helper()
	r := testcluster.Do(t, http.MethodPost, url+ucBase+"/schemas", map[string]any{"name": name, "catalog_name": catalog})
	if r.Status != http.StatusOK || r.Index() == 0 {
		t.Fatalf("create schema %s.%s via %s: %d %s", catalog, name, url, r.Status, r.Raw)
	}
	return r.Index()
}

// commit adds version v to a managed table through url; it returns the
// write's index.
func commit(t *testing.T, url, catalog, schema, table, uuid string, v int64) uint64 {
	t.Helper()
	r := testcluster.Do(t, http.MethodPost, url+testcluster.TablePath(catalog, schema, table),
		testcluster.CommitBody(uuid, v, testcluster.StagedName(v, fmt.Sprintf("c%d", v))))
	if r.Status != http.StatusOK {
		t.Fatalf("commit v%d of %s via %s: %d %s", v, table, url, r.Status, r.Raw)
	}
	if got := r.Body["latest-table-version"]; got != float64(v) {
		t.Fatalf("commit v%d: latest-table-version = %v", v, got)
	}
	return r.Index()
}

// catalogStatus reads a catalog linearizably through url and returns the status.
func catalogStatus(t *testing.T, url, name string) int {
	t.Helper()
	return testcluster.Do(t, http.MethodGet, url+ucBase+"/catalogs/"+name, nil).Status
}

// backup downloads a snapshot through url and checks it is a complete,
// valid raftcat snapshot.
func backup(t *testing.T, url string) ([]byte, snapshot.Header) {
	t.Helper()
	r := testcluster.Do(t, http.MethodGet, url+"/v1/cluster/snapshot", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET snapshot via %s: %d %s", url, r.Status, r.Raw)
	}
	hdr, _, err := snapshot.Verify(bytes.NewReader(r.Raw))
	if err != nil {
		t.Fatalf("downloaded snapshot (%d bytes) does not verify: %v", len(r.Raw), err)
	}
	if hdr.Index == 0 {
		t.Fatalf("snapshot header has index 0: %+v", hdr)
	}
	return r.Raw, hdr
}

// leaderOther waits until a running node other than old leads and is
// ready, and returns it.
func leaderOther(t *testing.T, nodes []*testcluster.Node, old *testcluster.Node) *testcluster.Node {
	t.Helper()
	var found *testcluster.Node
	testcluster.WaitFor(t, opsWait, "a leader other than "+old.ID(), func() bool {
		for _, nd := range nodes {
			if nd != old && nd.Up() && nd.IsLeader() && nd.Ready() {
				found = nd
				return true
			}
		}
		return false
	})
	return found
}

// requireIndexesSane checks that no running node claims to have applied
// more than its raft log holds.
func requireIndexesSane(t *testing.T, nodes []*testcluster.Node) {
	t.Helper()
	for _, nd := range nodes {
		if !nd.Up() {
			continue
		}
		if st := nd.Status(); st.AppliedIndex > st.LastIndex {
			t.Errorf("%s reports applied index %d beyond its last raft index %d (commit index %d)",
				nd.ID(), st.AppliedIndex, st.LastIndex, st.CommitIndex)
		}
	}
}

func TestFollowerBehindCompactedLogCatchesUpByInstallSnapshot(t *testing.T) {
	const trailing = 8
	// raft-boltdb deletes compacted entries; raft-wal keeps serving them
	// until their whole segment (64 MiB) goes, so with it the follower
	// would catch up from the log.
	opts := testcluster.Options{SnapshotThreshold: 64, SnapshotInterval: time.Second, TrailingLogs: trailing,
		LogStore: cluster.LogStoreBoltDB}
	nodes := testcluster.Start(t, 3, opts)
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]

	before := follower.Status()
	if before.LastSnapshotIndex != 0 {
		t.Fatalf("%s already has a snapshot of its own (index %d); its restart would restore it locally",
			follower.ID(), before.LastSnapshotIndex)
	}
	stoppedAt := max(before.LastIndex, before.AppliedIndex)
	follower.Stop()

	var last uint64
	for i := range 200 {
		last = createSchema(t, leader.URL, "unity", fmt.Sprintf("s%03d", i))
	}
	// The follower's next entry must be gone from the leader's log: a
	// snapshot more than TrailingLogs past it compacts it away.
	testcluster.WaitFor(t, opsWait, fmt.Sprintf("leader snapshot past index %d", stoppedAt+trailing), func() bool {
		return leader.Status().LastSnapshotIndex > stoppedAt+trailing
	})
	snapIndex := leader.Status().LastSnapshotIndex

	follower.Restart(t, leader.GossipAddr())
	waitApplied(t, nodes, last)
	// Raft records an installed snapshot just after the state machine has
	// restored it, so both are polled rather than read once.
	testcluster.WaitFor(t, opsWait, follower.ID()+" to report the snapshot it installed", func() bool {
		st := follower.Status()
		return st.SnapshotRestores >= 1 && st.LastSnapshotIndex >= snapIndex
	})
	r := testcluster.Do(t, http.MethodGet, follower.URL+ucBase+"/schemas/unity.s199", nil, "X-Raftcat-Consistency", "stale")
	if r.Status != http.StatusOK {
		t.Fatalf("last schema on %s: %d %s", follower.ID(), r.Status, r.Raw)
	}
	agreedDigest(t, nodes, last)
	requireConverged(t, nodes)
}

func TestStateDigestAgreesAcrossNodesAndTracksWrites(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]
	createCatalog(t, follower.URL, "sales")
	createSchema(t, leader.URL, "sales", "orders")
	id := testcluster.CreateManaged(t, follower.URL, leader.URL, "sales", "orders", "t1")
	last := commit(t, follower.URL, "sales", "orders", "t1", id, 1)

	before := agreedDigest(t, nodes, last)
	if before.AppliedIndex < last {
		t.Fatalf("agreed index %d < last write %d", before.AppliedIndex, last)
	}

	next := commit(t, leader.URL, "sales", "orders", "t1", id, 2)
	after := agreedDigest(t, nodes, next)
	if after.Digest == before.Digest {
		t.Fatalf("digest %s unchanged by commit v2 (index %d -> %d)", after.Digest, before.AppliedIndex, after.AppliedIndex)
	}
	requireConverged(t, nodes)
}

func TestBackupFromOneClusterRestoresIntoAnother(t *testing.T) {
	a := testcluster.Start(t, 3, testcluster.Options{})
	aLeader := testcluster.Leader(t, a)
	aFollower := testcluster.Followers(a, aLeader)[0]
	createCatalog(t, aFollower.URL, "sales")
	createSchema(t, aFollower.URL, "sales", "orders")
	// Enough writes that A's raft index is well past B's.
	for i := range 20 {
		createSchema(t, aLeader.URL, "unity", fmt.Sprintf("a%02d", i))
	}
	id := testcluster.CreateManaged(t, aFollower.URL, aLeader.URL, "sales", "orders", "t1")
	commit(t, aLeader.URL, "sales", "orders", "t1", id, 1)
	last := commit(t, aFollower.URL, "sales", "orders", "t1", id, 2)

	raw, hdr := backup(t, aFollower.URL)
	if hdr.Index < last {
		t.Fatalf("backup at index %d misses the write at %d", hdr.Index, last)
	}
	backupState, _, err := snapshot.ReadState(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := backupState.Digest()
	if got := getDigest(t, aLeader); got.Digest != want {
		t.Fatalf("A's leader digest %s (index %d) differs from its backup's %s (index %d)", got.Digest, got.AppliedIndex, want, hdr.Index)
	}

	b := testcluster.Start(t, 3, testcluster.Options{})
	bLeader := testcluster.Leader(t, b)
	bFollower := testcluster.Followers(b, bLeader)[0]
	seeded := createCatalog(t, bLeader.URL, "b_only")
	waitApplied(t, b, seeded)

	r := testcluster.Do(t, http.MethodPost, bFollower.URL+"/v1/cluster/restore", string(raw))
	if r.Status != http.StatusOK || r.Body["restored"] != true {
		t.Fatalf("restore via follower %s: %d %s", bFollower.ID(), r.Status, r.Raw)
	}
	if r.Body["snapshot_index"] != float64(hdr.Index) {
		t.Fatalf("restore answer %s, want snapshot_index %d", r.Raw, hdr.Index)
	}
	for _, nd := range b {
		testcluster.WaitFor(t, opsWait, nd.ID()+" to hold the restored state", func() bool {
			return getDigest(t, nd).Digest == want
		})
	}

	// The restored commit log continues in B.
	bLeader = testcluster.Leader(t, b)
	via := testcluster.Followers(b, bLeader)[0]
	next := commit(t, via.URL, "sales", "orders", "t1", id, 3)
	if s := catalogStatus(t, via.URL, "b_only"); s != http.StatusNotFound {
		t.Fatalf("B's own catalog survived the restore: GET b_only = %d", s)
	}
	if s := catalogStatus(t, via.URL, "sales"); s != http.StatusOK {
		t.Fatalf("restored catalog sales: %d", s)
	}
	load := testcluster.Do(t, http.MethodGet, bLeader.URL+testcluster.TablePath("sales", "orders", "t1"), nil)
	if load.Status != http.StatusOK || load.Body["latest-table-version"] != float64(3) {
		t.Fatalf("load t1 in B: %d %s", load.Status, load.Raw)
	}
	waitApplied(t, b, next)
	requireIndexesSane(t, b)
	agreedDigest(t, b, next)
	requireConverged(t, b)
}

func TestCorruptOrTruncatedRestoreIsRefused(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]
	createCatalog(t, leader.URL, "kept")
	last := createSchema(t, follower.URL, "kept", "s1")
	raw, _ := backup(t, follower.URL)
	before := agreedDigest(t, nodes, last)

	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 0x5a
	bad := map[string][]byte{
		"truncated":    raw[:len(raw)/2],
		"flipped byte": flipped,
		"empty":        {},
	}
	for name, body := range bad {
		for _, nd := range []*testcluster.Node{follower, leader} {
			r := testcluster.Do(t, http.MethodPost, nd.URL+"/v1/cluster/restore", string(body))
			if r.Status != http.StatusBadRequest {
				t.Fatalf("%s restore via %s: %d %s, want 400", name, nd.ID(), r.Status, r.Raw)
			}
			msg, _ := r.Body["error"].(string)
			if !strings.Contains(msg, "snapshot") {
				t.Fatalf("%s restore via %s: message %q does not mention the snapshot", name, nd.ID(), msg)
			}
		}
	}

	if got := getDigest(t, leader); got.Digest != before.Digest {
		t.Fatalf("digest changed by refused restores: %s (index %d) -> %s (index %d)",
			before.Digest, before.AppliedIndex, got.Digest, got.AppliedIndex)
	}
	for _, nd := range nodes {
		if s := catalogStatus(t, nd.URL, "kept"); s != http.StatusOK {
			t.Fatalf("catalog kept via %s after refused restores: %d", nd.ID(), s)
		}
	}
	for _, nd := range nodes {
		if n := nd.Status().SnapshotRestores; n != 0 {
			t.Fatalf("%s restored %d snapshots from refused uploads", nd.ID(), n)
		}
	}
	agreedDigest(t, nodes, last)
}

func TestTransferLeadership(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]

	requireLeaderCheck(t, nodes, leader)

	r := testcluster.Do(t, http.MethodPost, follower.URL+"/v1/cluster/transfer-leadership", map[string]any{})
	if r.Status != http.StatusOK {
		t.Fatalf("transfer via follower %s: %d %s", follower.ID(), r.Status, r.Raw)
	}
	second := leaderOther(t, nodes, leader)
	requireLeaderCheck(t, nodes, second)

	target := testcluster.Followers(nodes, second)[0]
	if target == leader { // prefer the node that has not led yet
		target = testcluster.Followers(nodes, second)[1]
	}
	via := testcluster.Followers(nodes, second)
	r = testcluster.Do(t, http.MethodPost, via[len(via)-1].URL+"/v1/cluster/transfer-leadership", map[string]any{"id": target.ID()})
	if r.Status != http.StatusOK {
		t.Fatalf("transfer to %s: %d %s", target.ID(), r.Status, r.Raw)
	}
	testcluster.WaitFor(t, opsWait, target.ID()+" to lead", func() bool { return target.IsLeader() && target.Ready() })
	for _, nd := range nodes {
		testcluster.WaitFor(t, opsWait, nd.ID()+" to see "+target.ID()+" lead", func() bool {
			return nd.Status().LeaderID == target.ID()
		})
	}

	requireLeaderCheck(t, nodes, target)

	if r := testcluster.Do(t, http.MethodPost, target.URL+"/v1/cluster/transfer-leadership", map[string]any{"id": "nope"}); r.Status != http.StatusNotFound {
		t.Fatalf("transfer to an unknown node: %d %s, want 404", r.Status, r.Raw)
	}
	w := createCatalog(t, leader.URL, "after_transfer")
	waitApplied(t, nodes, w)
	requireConverged(t, nodes)
}

// requireLeaderCheck waits until GET /readyz?leader, a load balancer's
// check, answers 200 on leader alone, and the others name it.
func requireLeaderCheck(t *testing.T, nodes []*testcluster.Node, leader *testcluster.Node) {
	t.Helper()
	testcluster.WaitFor(t, opsWait, "only "+leader.ID()+" to pass the leader check", func() bool {
		for _, nd := range nodes {
			r := testcluster.Do(t, http.MethodGet, nd.URL+"/readyz?leader", nil)
			want := http.StatusServiceUnavailable
			if nd == leader {
				want = http.StatusOK
			}
			if r.Status != want {
				return false
			}
			if nd != leader && r.Header.Get("Retry-After") == "" {
				t.Fatalf("%s: leader check 503 without Retry-After", nd.ID())
			}
			if nd != leader && leader.URL != fmt.Sprint("http://", r.Body["leader_http_addr"]) {
				return false
			}
		}
		return true
	})
}

func TestLeaderLeavesGracefully(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	rest := testcluster.Followers(nodes, leader)
	w := createCatalog(t, rest[0].URL, "before_leave")
	waitApplied(t, nodes, w)

	r := testcluster.Do(t, http.MethodPost, leader.URL+"/v1/cluster/leave", map[string]any{})
	if r.Status != http.StatusOK || r.Body["left"] != leader.ID() {
		t.Fatalf("leave on leader %s: %d %s", leader.ID(), r.Status, r.Raw)
	}
	leaderOther(t, rest, leader)
	testcluster.WaitFor(t, opsWait, leader.ID()+" to stop", func() bool {
		select {
		case <-leader.Done():
			return true
		default:
			return false
		}
	})
	leader.MarkStopped()

	waitMembers(t, rest, nodeIDs(rest)...)
	for i, nd := range rest {
		w = createCatalog(t, nd.URL, fmt.Sprintf("after_leave_%d", i))
	}
	waitApplied(t, rest, w)
	requireConverged(t, rest)
}

func TestLastVoterCannotLeave(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	only := testcluster.Leader(t, nodes)
	r := testcluster.Do(t, http.MethodPost, only.URL+"/v1/cluster/leave", map[string]any{})
	if r.Status != http.StatusBadRequest {
		t.Fatalf("leave on the only voter: %d %s, want 400", r.Status, r.Raw)
	}
	if msg, _ := r.Body["error"].(string); !strings.Contains(msg, "only voter") {
		t.Fatalf("leave on the only voter: message %q", msg)
	}
	select {
	case <-only.Done():
		t.Fatal("the only voter stopped after its leave was refused")
	default:
	}
	if !only.IsLeader() {
		t.Fatal("the only voter no longer leads after its leave was refused")
	}
	createCatalog(t, only.URL, "still_here")
	if ids := memberIDs(t, only); !slices.Equal(ids, []string{only.ID()}) {
		t.Fatalf("members after refused leave: %v", ids)
	}
}

func TestRemoveDeadNodeAndReplaceIt(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	followers := testcluster.Followers(nodes, leader)
	dead, via := followers[0], followers[1]
	dead.Stop()
	live := []*testcluster.Node{leader, via}

	r := testcluster.Do(t, http.MethodPost, via.URL+"/v1/cluster/remove-node", map[string]any{"id": dead.ID()})
	if r.Status != http.StatusOK || r.Body["removed"] != dead.ID() {
		t.Fatalf("remove %s via follower %s: %d %s", dead.ID(), via.ID(), r.Status, r.Raw)
	}
	waitMembers(t, live, nodeIDs(live)...)

	r = testcluster.Do(t, http.MethodPost, via.URL+"/v1/cluster/remove-node", map[string]any{"id": "node-unknown"})
	if r.Status != http.StatusNotFound {
		t.Fatalf("remove an unknown node: %d %s, want 404", r.Status, r.Raw)
	}
	r = testcluster.Do(t, http.MethodPost, via.URL+"/v1/cluster/remove-node", map[string]any{"id": dead.ID()})
	if r.Status != http.StatusNotFound {
		t.Fatalf("remove %s a second time: %d %s, want 404", dead.ID(), r.Status, r.Raw)
	}

	fourth := testcluster.Add(t, live, "node4", 3, testcluster.Options{})
	live = append(live, fourth)
	testcluster.WaitFor(t, opsWait, "node4 to be a voter", func() bool {
		for _, m := range testcluster.Leader(t, live).Status().Members {
			if m.ID == fourth.ID() && m.Voter {
				return true
			}
		}
		return false
	})
	testcluster.WaitReady(t, fourth)
	w := createCatalog(t, fourth.URL, "after_replace")
	w2 := createCatalog(t, via.URL, "after_replace_2")
	waitApplied(t, live, max(w, w2))
	waitMembers(t, live, nodeIDs(live)...)
	agreedDigest(t, live, max(w, w2))
	requireConverged(t, live)
}
