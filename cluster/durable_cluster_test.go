package cluster_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// In a three-node cluster the leader's log writes return before their
// sync, and followers' acceptances wait for it; followers, and the lone
// voter of a one-node cluster, sync every write before it returns.
func TestOnlyALeaderWithPeersDefersItsLogSync(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	stop := make(chan struct{})
	go func() { createSchemas(leader.URL, stop) }()
	testcluster.WaitFor(t, opsWait, "the leader to defer log syncs and hold acceptances for them", func() bool {
		return metricValue(t, leader.URL, "raftcat_raft_log_deferred_writes_total") >= 10 &&
			metricValue(t, leader.URL, "raftcat_raft_leader_sync_wait_seconds_count") >= 10
	})
	close(stop)
	for _, f := range testcluster.Followers(nodes, leader) {
		if got := metricValue(t, f.URL, "raftcat_raft_log_deferred_writes_total"); got != 0 {
			t.Errorf("follower %s deferred %v log syncs", f.ID(), got)
		}
	}

	lone := testcluster.Start(t, 1, testcluster.Options{})[0]
	testcluster.WaitFor(t, opsWait, "the lone node to lead", lone.IsLeader)
	if failed := createSchemasN(lone.URL, 5); failed != "" {
		t.Fatal(failed)
	}
	if got := metricValue(t, lone.URL, "raftcat_raft_log_deferred_writes_total"); got != 0 {
		t.Errorf("a one-node cluster deferred %v log syncs", got)
	}
}

// createSchemasN creates n schemas through one node and returns the
// answers that were not 200, or "".
func createSchemasN(base string, n int) string {
	var failed []string
	for i := range n {
		body := fmt.Sprintf(`{"name":"lone_%d","catalog_name":"unity"}`, i)
		if status, raw, err := call(http.MethodPost, base+"/api/2.1/unity-catalog/schemas", body); err != nil || status != http.StatusOK {
			failed = append(failed, fmt.Sprintf("POST %d %s %v", status, raw, err))
		}
	}
	return strings.Join(failed, "; ")
}
