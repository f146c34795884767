package deploy_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// freshChild marks the process that runs the fresh cluster.
const freshChild = "RAFTCAT_DEPLOY_FRESH_CHILD"

// A fresh cluster, before any client write, raft snapshot or object
// storage call, exposes every series the dashboard queries, so that no
// panel says "no data" until something happened. go-metrics keeps one
// sink per process, and the other tests' clusters make raft's series: the
// cluster runs in a process of its own.
func TestDashboardSeriesOnAFreshCluster(t *testing.T) {
	if os.Getenv(freshChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDashboardSeriesOnAFreshCluster$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshChild+"=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("the fresh cluster's process: %v\n%s", err, out)
		}
		return
	}
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: adminToken})
	testcluster.Leader(t, nodes)
	used := map[string][]string{}
	addNames(used, dashboardExprs(t))
	var missing []string
	defer func() {
		if t.Failed() {
			t.Logf("missing on a fresh cluster:\n%s", strings.Join(missing, "\n"))
		}
	}()
	testcluster.WaitFor(t, 30*time.Second, "every series of the dashboard", func() bool {
		exposed := map[string]bool{}
		for _, nd := range nodes {
			for name := range seriesNames(parse(t, nd.ID(), scrape(t, nd.URL+"/metrics"))) {
				exposed[name] = true
			}
		}
		missing = unknownNames(used, exposed, nil)
		return len(missing) == 0
	})
	for _, nd := range nodes {
		if st := nd.Status(); st.LastSnapshotIndex != 0 {
			t.Fatalf("%s took a snapshot at index %d: the cluster is not fresh", nd.ID(), st.LastSnapshotIndex)
		}
	}
}
