package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// freeBase finds a port base b such that b+1..b+n are free on loopback.
func freeBase(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		base := 20000 + rand.IntN(12000) // below the ephemeral range other tests draw from
		ok := true
		for i := 1; i <= n && ok; i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// TestLocalClusterScriptAndWalkthrough runs what the README tells a new
// user to run: scripts/local-cluster.sh start|status|stop and the curl
// walk-through against a follower of that cluster.
func TestLocalClusterScriptAndWalkthrough(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	httpBase, raftBase, gossipBase := freeBase(t, 3), freeBase(t, 3), freeBase(t, 3)
	env := append(os.Environ(), "RAFTCAT_CLUSTER_DIR="+dir,
		fmt.Sprintf("RAFTCAT_HTTP_BASE=%d", httpBase), fmt.Sprintf("RAFTCAT_RAFT_BASE=%d", raftBase),
		fmt.Sprintf("RAFTCAT_GOSSIP_BASE=%d", gossipBase))
	script := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", args...)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		cmd := exec.Command("bash", "scripts/local-cluster.sh", "stop")
		cmd.Dir, cmd.Env = root, env
		_ = cmd.Run()
		if t.Failed() {
			for i := 1; i <= 3; i++ {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d.log", i)))
				t.Logf("---- node%d log ----\n%s", i, b)
			}
		}
	})
	if out := script("scripts/local-cluster.sh", "start"); !strings.Contains(out, "cluster of 3 ready") {
		t.Fatalf("start output:\n%s", out)
	}
	status := script("scripts/local-cluster.sh", "status")
	if strings.Count(status, `"state":"Leader"`) != 1 || strings.Count(status, "running") != 3 {
		t.Fatalf("status should show 3 running nodes and one leader:\n%s", status)
	}
	out := script("scripts/walkthrough.sh", fmt.Sprintf("http://127.0.0.1:%d", httpBase+2))
	if !strings.Contains(out, "walk-through finished") {
		t.Fatalf("walk-through output:\n%s", out)
	}
	if stop := script("scripts/local-cluster.sh", "stop"); strings.Count(stop, "stopped") != 3 {
		t.Fatalf("stop output:\n%s", stop)
	}
}
