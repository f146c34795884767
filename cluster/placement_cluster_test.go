package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// A client that talks to one follower only: leadership moves to that
// follower, and the client's requests keep being answered meanwhile.
func TestLeadershipMovesToTheFollowerAllRequestsComeIn(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{Placement: &testcluster.Placement{Window: 300 * time.Millisecond,
		MinRequests: 50, Cooldown: 2 * time.Second}})
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
		return metricValue(t, leader.URL, "raftcat_leadership_moves_total") == 1
	})
}

// Leadership an operator handed to a node stays there for the cooldown,
// however the requests come in: the new leader holds the move they ask
// for, and says so.
func TestLeadershipHandedOverStaysForTheCooldown(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{Placement: &testcluster.Placement{Window: 300 * time.Millisecond,
		MinRequests: 50, Cooldown: time.Hour}})
	leader := testcluster.Leader(t, nodes)
	followers := testcluster.Followers(nodes, leader)
	to, via := followers[0], followers[1]
	ctx, cancel := context.WithTimeout(context.Background(), opsWait)
	defer cancel()
	if err := leader.TransferLeadership(ctx, to.ID()); err != nil {
		t.Fatalf("transfer to %s: %v", to.ID(), err)
	}
	testcluster.WaitFor(t, opsWait, to.ID()+" to lead", to.IsLeader)

	stop, answers := make(chan struct{}), make(chan string, 1)
	go func() { answers <- createSchemas(via.URL, stop) }()
	testcluster.WaitFor(t, opsWait, to.ID()+" to hold a move to "+via.ID(), func() bool {
		return metricValue(t, to.URL, "raftcat_leadership_moves_held_total") >= 1
	})
	close(stop)
	if failed := <-answers; failed != "" {
		t.Fatalf("requests through %s failed: %s", via.ID(), failed)
	}
	if !to.IsLeader() || metricValue(t, to.URL, "raftcat_leadership_moves_total") != 0 {
		t.Fatalf("%s moved leadership within the cooldown (leads: %v)", to.ID(), to.IsLeader())
	}
}

// metricValue reads one unlabelled metric off a node's /metrics (-1: absent).
func metricValue(t *testing.T, base, name string) float64 {
	t.Helper()
	r := testcluster.Do(t, http.MethodGet, base+"/metrics", nil)
	for _, l := range strings.Split(r.Text(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return -1
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
