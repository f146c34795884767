package cluster_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// A client that talks to one follower only: leadership moves to that
// follower, and the client's requests keep being answered meanwhile.
func TestLeadershipMovesToTheFollowerAllRequestsComeIn(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{Placement: &testcluster.Placement{Window: 300 * time.Millisecond, MinRequests: 50}})
	leader := testcluster.Leader(t, nodes)
	via := testcluster.Followers(nodes, leader)[0]

	stop, answers := make(chan struct{}), make(chan string, 1)
	go func() { answers <- createSchemas(via.URL, stop) }()
	testcluster.WaitFor(t, opsWait, via.ID()+" to lead", via.IsLeader)
	close(stop)
	if failed := <-answers; failed != "" {
		t.Fatalf("requests through %s failed while leadership moved: %s", via.ID(), failed)
	}
	r := testcluster.Do(t, http.MethodGet, leader.URL+"/metrics", nil)
	if !strings.Contains(r.Text(), "\nraftcat_leadership_moves_total 1\n") {
		t.Fatalf("the former leader did not count its move:\n%s", grepLines(r.Text(), "raftcat_leadership_moves_total"))
	}
}

// createSchemas creates schemas through one node until stop is closed; it
// returns the answers that were not 200, or "". A write in raft when the
// old leader stepped down may answer that its outcome is unknown.
func createSchemas(base string, stop <-chan struct{}) string {
	var failed []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return strings.Join(failed, "; ")
		default:
		}
		body := fmt.Sprintf(`{"name":"placed_%d","catalog_name":"unity"}`, i)
		resp, err := http.Post(base+"/api/2.1/unity-catalog/schemas", "application/json", strings.NewReader(body))
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && !strings.Contains(string(raw), "outcome of the request is unknown") {
			failed = append(failed, fmt.Sprintf("%d %s", resp.StatusCode, raw))
		}
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
