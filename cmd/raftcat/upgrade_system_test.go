package main

// A rolling upgrade with real processes: a three-node cluster of the
// release at upgradeFrom is replaced node by node with the binary built
// from this tree while writers commit, and nothing acknowledged is lost.
// The new binary reads the old one's data dirs (raft log, snapshots),
// talks raft, gossip and HTTP relay with old nodes while the versions are
// mixed, and its own snapshots (raft and backup) restore.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// upgradeFrom is the release the upgrade starts from.
const upgradeFrom = "2fa8555331706603c606fc91f151a0902b6d79df"

// upgradeFlags make every node snapshot often and keep few log entries,
// so each data dir holds a snapshot when its binary is replaced.
func upgradeFlags(int) []string {
	return []string{"--snapshot-threshold", strconv.Itoa(upgradeSnapshotThreshold), "--snapshot-interval", "250ms", "--trailing-logs", "64"}
}

const upgradeSnapshotThreshold = 64

// TestRollingUpgradeUnderCommitLoadLosesNothing replaces the release's
// nodes one at a time (a follower, then the leader, then the last one)
// with the new binary on the same data dir and ports, under a commit load
// through every node. While versions are mixed, commits succeed through
// every node. At the end every acknowledged commit is on every node,
// versions are contiguous, the state digests agree, and snapshots taken
// by the new binary restore: its raft snapshot on a restart, its backup
// through the restore endpoint.
func TestRollingUpgradeUnderCommitLoadLosesNothing(t *testing.T) {
	oldBin, newBin := releaseBinary(t, upgradeFrom), raftcatBinary(t)
	nodes := startOpsClusterOf(t, oldBin, 3, upgradeFlags)
	u := &upgrade{t: t, nodes: nodes, newBin: newBin, caughtUp: map[*opsNode]uint64{}}
	opsLeader(t, nodes)
	for i := range 3 {
		w := newTableWriter(t, nodes, i, fmt.Sprintf("upgrade%d", i))
		w.lag = 5
		u.writers = append(u.writers, w)
	}
	probe := newProbeTable(t, nodes, "mixed")
	stopWriters := runWriters(u.writers, time.Now().Add(150*time.Second))
	defer stopWriters()
	u.progressed("writers committing on the old release", 3)
	u.waitOldSnapshots()

	u.replace(u.oldFollower())
	probe.commitThroughEach(t, u, "1 new, 2 old")
	u.replace(u.oldLeader())
	probe.commitThroughEach(t, u, "2 new, 1 old")
	u.replace(u.remainingOld())
	u.waitNewSnapshots()
	stopWriters()
	u.checkRunning()
	if !u.leaderReplaced {
		t.Error("no node was leading when its binary was replaced")
	}

	digest := waitConverged(t, nodes, 60*time.Second)
	verifyWriters(t, nodes, u.writers)
	probe.verify(t, nodes)
	u.restartRestoresOwnSnapshot(digest)
	backupRestores(t, nodes, probe, digest)
}

// upgrade drives the replacement of the release's nodes.
type upgrade struct {
	t              *testing.T
	nodes          []*opsNode
	writers        []*tableWriter
	newBin         string
	caughtUp       map[*opsNode]uint64 // upgraded node -> index it caught up to on the new binary
	leaderReplaced bool
}

func (u *upgrade) upgraded(nd *opsNode) bool { return nd.bin == u.newBin }

func (u *upgrade) release(nd *opsNode) string {
	if u.upgraded(nd) {
		return "new"
	}
	return "old"
}

// progressed waits until every writer has had more commits acknowledged.
func (u *upgrade) progressed(what string, more int) {
	u.t.Helper()
	base := make([]int, len(u.writers))
	for i, w := range u.writers {
		base[i] = w.acked()
	}
	testcluster.WaitFor(u.t, 30*time.Second, what, func() bool {
		for i, w := range u.writers {
			if w.acked() < base[i]+more {
				return false
			}
		}
		return true
	})
}

func (u *upgrade) checkRunning() {
	u.t.Helper()
	for _, nd := range u.nodes {
		if !nd.stillRunning() {
			u.t.Fatalf("%s (%s release) exited by itself", nd.name, u.release(nd))
		}
	}
}

// statusNumber reads a numeric field of a node's GET /v1/cluster.
func statusNumber(url, field string) (uint64, bool) {
	b, ok := getJSON(url + "/v1/cluster")
	if !ok {
		return 0, false
	}
	v, ok := b[field].(float64)
	return uint64(v), ok
}

// waitOldSnapshots waits until every node of the release has taken a raft
// snapshot, which the new binary then has to restore when it starts.
func (u *upgrade) waitOldSnapshots() {
	u.t.Helper()
	for _, nd := range u.nodes {
		testcluster.WaitFor(u.t, 30*time.Second, nd.name+" taking a snapshot on the old release", func() bool {
			idx, ok := statusNumber(nd.url, "last_snapshot_index")
			return ok && idx > 0
		})
	}
}

// waitNewSnapshots waits until every node has taken a raft snapshot since
// it runs the new binary.
func (u *upgrade) waitNewSnapshots() {
	u.t.Helper()
	for _, nd := range u.nodes {
		testcluster.WaitFor(u.t, 30*time.Second, nd.name+" taking a snapshot on the new binary", func() bool {
			idx, ok := statusNumber(nd.url, "last_snapshot_index")
			return ok && idx > u.caughtUp[nd]
		})
	}
}

// leaderNow is the running, ready node that says it leads, or nil.
func (u *upgrade) leaderNow() *opsNode {
	for _, nd := range u.nodes {
		if v, ok := viewOf(nd.url); ok && nd.running && v.State == "Leader" && nd.ready() {
			return nd
		}
	}
	return nil
}

// oldFollower is the first node of the release that does not lead.
func (u *upgrade) oldFollower() *opsNode {
	u.t.Helper()
	leader := opsLeader(u.t, u.nodes)
	for _, nd := range othersThan(u.nodes, leader) {
		if !u.upgraded(nd) {
			return nd
		}
	}
	u.t.Fatal("no follower runs the old release")
	return nil
}

// oldLeader returns the leader once it runs the old release; leadership
// held by an upgraded node is handed to one of the release's nodes.
func (u *upgrade) oldLeader() *opsNode {
	u.t.Helper()
	var leader *opsNode
	testcluster.WaitFor(u.t, 30*time.Second, "an old-release node leading", func() bool {
		leader = u.leaderNow()
		if leader == nil || !u.upgraded(leader) {
			return leader != nil
		}
		target := u.remainingOld()
		body := fmt.Sprintf(`{"id": %q}`, target.name)
		resp, err := opsHTTP.Post(leader.url+"/v1/cluster/transfer-leadership", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		return false
	})
	return leader
}

func (u *upgrade) remainingOld() *opsNode {
	u.t.Helper()
	for _, nd := range u.nodes {
		if !u.upgraded(nd) {
			return nd
		}
	}
	u.t.Fatal("every node already runs the new binary")
	return nil
}

// replace stops nd gracefully (a plain SIGTERM, as in a rolling restart:
// a leader hands leadership over, nobody leaves the configuration), starts
// the new binary on its data dir and ports, and waits until it has
// rejoined, caught up and writes flow again.
func (u *upgrade) replace(nd *opsNode) {
	t := u.t
	t.Helper()
	u.checkRunning()
	v, _ := viewOf(nd.url)
	wasLeader := v.State == "Leader"
	u.leaderReplaced = u.leaderReplaced || wasLeader
	snapIdx, _ := statusNumber(nd.url, "last_snapshot_index")
	from := time.Now()
	if err := nd.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("%s (old release) exit after SIGTERM: %v", nd.name, err)
	}
	stopped := time.Since(from)
	nd.bin = u.newBin
	started := time.Now()
	nd.launch(t)
	u.waitRejoined(nd)
	rejoined := time.Since(started)
	u.checkRestoredAtStart(nd, snapIdx)
	// Long enough for some traffic between the versions: the node was
	// down for hundreds of entries, more than --trailing-logs keeps.
	u.progressed("writers committing after upgrading "+nd.name, 50)
	restores, _ := statusNumber(nd.url, "snapshot_restores")
	t.Logf("upgraded %s (leader: %v): SIGTERM to exit %v, start to caught up %v (index %d), writes flowing %v after start; snapshots restored since start: %d",
		nd.name, wasLeader, stopped.Round(time.Millisecond), rejoined.Round(time.Millisecond), u.caughtUp[nd],
		time.Since(started).Round(time.Millisecond), restores)
}

// waitRejoined waits until nd is ready, follows a leader in a
// configuration of every node, has applied what the leader had applied
// when it became ready, and every node's gossip sees every node alive.
func (u *upgrade) waitRejoined(nd *opsNode) {
	t := u.t
	t.Helper()
	waitReady(t, nd, "on the new binary")
	testcluster.WaitFor(t, 30*time.Second, nd.name+" knowing the leader and every member", func() bool {
		v, ok := viewOf(nd.url)
		return ok && v.LeaderID != "" && len(v.Members) == len(u.nodes)
	})
	var target uint64
	testcluster.WaitFor(t, 30*time.Second, "the leader's applied index", func() bool {
		leader := u.leaderNow()
		if leader == nil {
			return false
		}
		_, idx, ok := stateDigest(leader.url)
		target = idx
		return ok
	})
	testcluster.WaitFor(t, 30*time.Second, fmt.Sprintf("%s catching up to index %d", nd.name, target), func() bool {
		_, idx, ok := stateDigest(nd.url)
		return ok && idx >= target
	})
	u.caughtUp[nd] = target
	testcluster.WaitFor(t, 30*time.Second, "every node's gossip seeing every node alive", func() bool {
		for _, a := range u.nodes {
			for _, b := range othersThan(u.nodes, a) {
				if gossipStatus(a.url, b.name) != "alive" {
					return false
				}
			}
		}
		return true
	})
}

// waitReady waits until nd is ready, failing at once if it exits.
func waitReady(t *testing.T, nd *opsNode, what string) {
	t.Helper()
	testcluster.WaitFor(t, 60*time.Second, nd.name+" ready "+what, func() bool {
		if !nd.stillRunning() {
			t.Fatalf("%s exited %s:\n%s", nd.name, what, nd.past[len(nd.past)-1])
		}
		return nd.ready()
	})
}

var restoredAt = regexp.MustCompile(`msg="restored state from snapshot".* index=(\d+)`)

// restoredIndex is the index of the snapshot a run's log says it
// restored first; raft falls back to an older snapshot when the newest
// fails to restore, and logs that failure.
func restoredIndex(t *testing.T, nd *opsNode) uint64 {
	t.Helper()
	log := nd.log.String()
	if strings.Contains(strings.ToLower(log), "failed to restore snapshot") {
		t.Errorf("%s failed to restore a snapshot:\n%s", nd.name, log)
	}
	m := restoredAt.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("%s restored no snapshot when it started:\n%s", nd.name, log)
	}
	idx, _ := strconv.ParseUint(m[1], 10, 64)
	return idx
}

// checkRestoredAtStart checks that the new binary restored the release's
// snapshot from nd's data dir (the one at snapIdx, or a newer one taken
// before the old process stopped).
func (u *upgrade) checkRestoredAtStart(nd *opsNode, snapIdx uint64) {
	u.t.Helper()
	if idx := restoredIndex(u.t, nd); idx < snapIdx || snapIdx == 0 {
		u.t.Errorf("%s on the new binary restored the snapshot at index %d, want the release's at %d or later", nd.name, idx, snapIdx)
	}
}

// restartRestoresOwnSnapshot restarts a follower, idle, so its newest
// raft snapshot is one the new binary took; it must restore exactly that
// one and come back to the cluster's digest.
func (u *upgrade) restartRestoresOwnSnapshot(digest string) {
	t := u.t
	t.Helper()
	nd := othersThan(u.nodes, opsLeader(t, u.nodes))[0]
	// No snapshot is due: the one on disk stays the newest.
	var snapIdx uint64
	testcluster.WaitFor(t, 30*time.Second, nd.name+" having no snapshot due", func() bool {
		last, ok1 := statusNumber(nd.url, "last_index")
		snap, ok2 := statusNumber(nd.url, "last_snapshot_index")
		snapIdx = snap
		return ok1 && ok2 && last-snap < upgradeSnapshotThreshold
	})
	if snapIdx <= u.caughtUp[nd] {
		t.Fatalf("%s: last snapshot at %d, not one of the new binary (caught up at %d)", nd.name, snapIdx, u.caughtUp[nd])
	}
	if err := nd.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("%s exit after SIGTERM: %v", nd.name, err)
	}
	nd.launch(t)
	waitReady(t, nd, "after a restart")
	if idx := restoredIndex(t, nd); idx != snapIdx {
		t.Errorf("%s restarted from the snapshot at index %d, want its newest, at %d", nd.name, idx, snapIdx)
	}
	testcluster.WaitFor(t, 30*time.Second, nd.name+" back at the cluster's state digest", func() bool {
		d, _, ok := stateDigest(nd.url)
		return ok && d == digest
	})
	t.Logf("%s restarted from the new binary's snapshot at index %d", nd.name, snapIdx)
}

// probeTable is a table committed to through each node in turn.
type probeTable struct {
	uuid, path string
	next       int64 // next version to commit
}

func newProbeTable(t *testing.T, nodes []*opsNode, name string) *probeTable {
	t.Helper()
	uuid := testcluster.CreateManaged(t, nodes[0].url, nodes[1].url, "unity", "default", name)
	return &probeTable{uuid: uuid, path: testcluster.TablePath("unity", "default", name), next: 1}
}

// commitRetrying posts a commit until it gets an answer other than a 5xx
// or a transport error, retrying the identical request as Delta clients
// do.
func commitRetrying(t *testing.T, url string, body []byte) (int, []byte) {
	t.Helper()
	var status int
	var answer []byte
	testcluster.WaitFor(t, 30*time.Second, "a commit through "+url, func() bool {
		resp, err := opsHTTP.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		status = resp.StatusCode
		answer, _ = io.ReadAll(resp.Body)
		return status < 500
	})
	return status, answer
}

// commit commits the next version through url and checks the answer.
func (p *probeTable) commit(t *testing.T, url, what string) {
	t.Helper()
	body := commitWithBackfill(p.uuid, p.next, testcluster.StagedName(p.next, "probe-"+randomID()), 1)
	status, answer := commitRetrying(t, url+p.path, body)
	var got loadedTable
	if status != http.StatusOK || json.Unmarshal(answer, &got) != nil || got.Latest != p.next {
		t.Fatalf("commit v%d through %s: %d %s", p.next, what, status, answer)
	}
	p.next++
}

// commitThroughEach commits through every node, and reads the commit
// back linearizably through the same node.
func (p *probeTable) commitThroughEach(t *testing.T, u *upgrade, stage string) {
	t.Helper()
	u.checkRunning()
	for _, nd := range u.nodes {
		what := fmt.Sprintf("%s (%s release; %s)", nd.name, u.release(nd), stage)
		p.commit(t, nd.url, what)
		var r testcluster.Response
		testcluster.WaitFor(t, 30*time.Second, "a linearizable load through "+what, func() bool {
			r = testcluster.Do(t, http.MethodGet, nd.url+p.path, nil)
			return r.Status != http.StatusServiceUnavailable
		})
		if r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(p.next-1) {
			t.Fatalf("linearizable load through %s: %d %s, want latest-table-version %d", what, r.Status, r.Raw, p.next-1)
		}
	}
	t.Logf("commits and linearizable loads through every node with %s", stage)
}

// verify checks that every node holds the probe table's last version.
func (p *probeTable) verify(t *testing.T, nodes []*opsNode) {
	t.Helper()
	for _, nd := range nodes {
		r := testcluster.Do(t, http.MethodGet, nd.url+p.path, nil, "X-Raftcat-Consistency", "stale")
		if r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(p.next-1) {
			t.Errorf("%s: probe table %d %s, want latest-table-version %d", nd.name, r.Status, r.Raw, p.next-1)
		}
	}
}

// backupRestores saves a backup with the new binary, changes the catalog,
// restores the backup, and checks every node is back at the backed-up
// state digest and takes writes.
func backupRestores(t *testing.T, nodes []*opsNode, probe *probeTable, digest string) {
	t.Helper()
	leader := opsLeader(t, nodes)
	followers := othersThan(nodes, leader)
	file := filepath.Join(t.TempDir(), "upgraded.snap")
	if code, out, errOut := runCLI(t, "snapshot", "save", "--addr", followers[0].url, file); code != 0 {
		t.Fatalf("snapshot save: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "snapshot", "inspect", file); code != 0 {
		t.Fatalf("snapshot inspect: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	backedUp := probe.next
	probe.commit(t, leader.url, "the leader, after the backup")
	if changed := waitConverged(t, nodes, 30*time.Second); changed == digest {
		t.Fatalf("state digest %s did not change with a commit", digest)
	}
	if code, out, errOut := runCLI(t, "snapshot", "restore", "--addr", followers[1].url, file); code != 0 {
		t.Fatalf("snapshot restore: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if restored := waitConverged(t, nodes, 60*time.Second); restored != digest {
		t.Fatalf("state digest %s after restoring the backup, want the backed-up %s", restored, digest)
	}
	probe.next = backedUp
	probe.verify(t, nodes)
	probe.commit(t, followers[0].url, followers[0].name+", after the restore")
	t.Logf("the new binary's backup restored to state digest %s", digest)
}
