package iceberg_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// A commit is timed stage by stage on the leader
// (raftcat_write_stage_seconds), each stage once per commit, so that
// raftcat bench can say where an Iceberg commit's time goes.
func TestCommitStagesAreTimed(t *testing.T) {
	nodes := setup(t)
	create(t, nodes[0], "timed")
	leader := testcluster.Leader(t, nodes)
	before := stageCounts(t, leader)
	const commits = 3
	for i := range commits {
		set := fmt.Sprintf(`{"action":"set-properties","updates":{"n":"%d"}}`, i)
		ok(t, http.StatusOK, http.MethodPost, base(nodes[i%3])+"/namespaces/db/tables/timed", change("timed", "", set))
	}
	after := stageCounts(t, leader)
	for _, st := range []string{"decode", "read base", "requirements", "update", "encode", "file write", "render"} {
		if got := after[st] - before[st]; got != commits {
			t.Errorf("stage %q timed %v times for %d commits", st, got, commits)
		}
	}
}

// stageCounts reads the Iceberg stages' counts off a node's /metrics.
func stageCounts(t *testing.T, nd *testcluster.Node) map[string]float64 {
	t.Helper()
	resp, err := http.Get(nd.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, found := strings.CutPrefix(line, `raftcat_write_stage_seconds_count{protocol="iceberg",stage="`)
		if !found {
			continue
		}
		name, value, _ := strings.Cut(rest, `"} `)
		var v float64
		fmt.Sscan(value, &v)
		out[name] = v
	}
	if len(out) == 0 {
		t.Fatalf("no Iceberg stage series on %s/metrics", nd.URL)
	}
	return out
}
