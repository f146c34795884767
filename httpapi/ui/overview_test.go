package ui_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// overview is the part of /ui/api/overview the tests read.
type overview struct {
	NodeID   string `json:"node_id"`
	Role     string `json:"role"`
	LeaderID string `json:"leader_id"`
	Members  []struct {
		ID        string  `json:"id"`
		Role      string  `json:"role"`
		Reachable bool    `json:"reachable"`
		Gossip    string  `json:"gossip"`
		Term      *uint64 `json:"term"`
		Lag       *uint64 `json:"lag"`
	} `json:"members"`
	LeaderChanges []struct {
		Term     uint64 `json:"term"`
		LeaderID string `json:"leader_id"`
	} `json:"leader_changes"`
	Metrics struct {
		StepS  int `json:"step_s"`
		Series []struct {
			T            int64    `json:"t"`
			CommandsPerS float64  `json:"commands_per_s"`
			P99Ms        *float64 `json:"p99_ms"`
		} `json:"series"`
	} `json:"metrics"`
	TablesByFormat map[string]int `json:"tables_by_format"`
}

func getOverview(t *testing.T, base string) overview {
	t.Helper()
	r := ok(t, http.MethodGet, base+"/ui/api/overview", nil)
	var o overview
	if err := json.Unmarshal(r.Raw, &o); err != nil {
		t.Fatalf("overview: %v\n%s", err, r.Raw)
	}
	return o
}

// leaders counts the members that report themselves leading.
func (o overview) leaders() int {
	n := 0
	for _, m := range o.Members {
		if m.Role == "leader" {
			n++
		}
	}
	return n
}

// caughtUp reports whether every member answered and none lags.
func (o overview) caughtUp() bool {
	for _, m := range o.Members {
		if !m.Reachable || m.Gossip != "alive" || m.Lag == nil || *m.Lag != 0 {
			return false
		}
	}
	return len(o.Members) == 3
}

// busy reports whether some point shows commands applied and a write's
// latency.
func (o overview) busy() (commands, latency bool) {
	for _, p := range o.Metrics.Series {
		commands = commands || p.CommandsPerS > 0
		latency = latency || p.P99Ms != nil && *p.P99Ms > 0
	}
	return commands, latency
}

// A follower answers the overview from its own view: every member with
// its own report, the tables of its state, and its own metrics.
func TestOverviewOnAFollower(t *testing.T) {
	_, leader, follower := startCluster(t)
	c := createTables(t, follower.URL)
	for range 3 {
		c.commitAll(t, follower.URL)
	}
	var o overview
	testcluster.WaitFor(t, 30*time.Second, "the follower's overview to show the writes", func() bool {
		o = getOverview(t, follower.URL)
		commands, latency := o.busy()
		return o.caughtUp() && maps.Equal(o.TablesByFormat, c.byFormat) && commands && latency
	})
	if o.NodeID != follower.ID() || o.Role != "follower" || o.LeaderID != leader.ID() || o.leaders() != 1 {
		t.Fatalf("overview on %s: %+v", follower.ID(), o)
	}
	if n := len(o.Metrics.Series); o.Metrics.StepS != 5 || n < 120 || n > 121 {
		t.Fatalf("%d points of %d s, want ten minutes of 5 s", n, o.Metrics.StepS)
	}
	if len(o.LeaderChanges) == 0 || o.LeaderChanges[0].LeaderID != leader.ID() {
		t.Fatalf("leader changes = %+v, want %s's election first", o.LeaderChanges, leader.ID())
	}
}
