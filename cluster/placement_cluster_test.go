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
	testcluster.WaitFor(t, opsWait, "the former leader to count its move", func() bool {
		r := testcluster.Do(t, http.MethodGet, leader.URL+"/metrics", nil)
		return strings.Contains(r.Text(), "\nraftcat_leadership_moves_total 1\n")
	})
}

// createSchemas creates schemas through one node, and reads each back,
// until stop is closed; it returns the answers that were not 200, or "".
// A write in raft when the old leader stepped down may answer that its
// outcome is unknown; a read never fails.
func createSchemas(base string, stop <-chan struct{}) string {
	var failed []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return strings.Join(failed, "; ")
		default:
		}
		body := fmt.Sprintf(`{"name":"placed_%d","catalog_name":"unity"}`, i)
		status, raw, err := call(http.MethodPost, base+"/api/2.1/unity-catalog/schemas", body)
		switch {
		case err != nil:
			failed = append(failed, err.Error())
			continue
		case status != http.StatusOK && !strings.Contains(raw, "outcome of the request is unknown"):
			failed = append(failed, fmt.Sprintf("POST %d %s", status, raw))
			continue
		}
		status, raw, err = call(http.MethodGet, base+"/api/2.1/unity-catalog/catalogs/unity", "")
		if err != nil || status != http.StatusOK {
			failed = append(failed, fmt.Sprintf("GET %d %s %v", status, raw, err))
		}
	}
}

// call sends one request and returns the answer's status and body.
func call(method, url, body string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), err
}
