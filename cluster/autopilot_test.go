package cluster_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

func isMember(nd *testcluster.Node, id string) bool {
	for _, m := range nd.Status().Members {
		if m.ID == id {
			return true
		}
	}
	return false
}

// autopilotSawUnhealthy reports whether the leader's autopilot has
// evaluated id and found it unhealthy.
func autopilotSawUnhealthy(leader *testcluster.Node, id string) bool {
	ap := leader.Status().Autopilot
	if ap == nil {
		return false
	}
	healthy, seen := ap.Servers[id]
	return seen && !healthy
}

func TestAutopilotRemovesADeadServerAfterTheThreshold(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{DeadServerThreshold: 2 * time.Second, MinQuorum: 2})
	leader := testcluster.Leader(t, nodes)
	dead := testcluster.Followers(nodes, leader)[0]
	dead.Stop()
	testcluster.WaitFor(t, 60*time.Second, "autopilot to remove "+dead.ID(), func() bool { return !isMember(leader, dead.ID()) })
	r := testcluster.Do(t, http.MethodPost, leader.URL+ucBase+"/catalogs", map[string]any{"name": "after_cleanup"})
	if r.Status != http.StatusOK {
		t.Fatalf("write after cleanup: %d %s", r.Status, r.Raw)
	}
}

func TestAutopilotNeverGoesBelowMinQuorum(t *testing.T) {
	const threshold = time.Second
	nodes := testcluster.Start(t, 3, testcluster.Options{DeadServerThreshold: threshold, MinQuorum: 3})
	leader := testcluster.Leader(t, nodes)
	dead := testcluster.Followers(nodes, leader)[0]
	dead.Stop()
	testcluster.WaitFor(t, 30*time.Second, "autopilot to see "+dead.ID()+" unhealthy", func() bool { return autopilotSawUnhealthy(leader, dead.ID()) })
	// Watch well past the threshold: removing it would leave 2 < 3 voters.
	deadline := time.Now().Add(8 * threshold)
	for time.Now().Before(deadline) {
		if !isMember(leader, dead.ID()) {
			t.Fatalf("%s was removed although that leaves fewer than MinQuorum voters", dead.ID())
		}
		time.Sleep(100 * time.Millisecond) // sampling an observation window, not synchronisation
	}
}

func TestAutopilotKeepsAServerPausedShorterThanTheThreshold(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{DeadServerThreshold: time.Hour, MinQuorum: 2})
	leader := testcluster.Leader(t, nodes)
	paused := testcluster.Followers(nodes, leader)[0]
	paused.Stop()
	testcluster.WaitFor(t, 30*time.Second, "autopilot to see "+paused.ID()+" unhealthy", func() bool { return autopilotSawUnhealthy(leader, paused.ID()) })
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !isMember(leader, paused.ID()) {
			t.Fatalf("%s was removed before the threshold", paused.ID())
		}
		time.Sleep(100 * time.Millisecond) // sampling an observation window, not synchronisation
	}
	paused.Restart(t)
	testcluster.WaitReady(t, paused)
	testcluster.WaitFor(t, 30*time.Second, "autopilot to see "+paused.ID()+" healthy again", func() bool {
		ap := leader.Status().Autopilot
		return ap != nil && ap.Servers[paused.ID()]
	})
}
