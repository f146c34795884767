package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
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
// walk-through against a follower of that cluster, with authentication on
// as the script starts it: the walk-through sends the admin token the
// script made, and a request without it is refused.
func TestLocalClusterScriptAndWalkthrough(t *testing.T) { localClusterScript(t, false) }

// TestLocalClusterScriptSecure is the same with start --secure: the nodes
// serve HTTPS with the CA the script made (a plain HTTP request is
// refused), talk to each other over mutual TLS and encrypt gossip; the
// walk-through and status reach them trusting that CA.
func TestLocalClusterScriptSecure(t *testing.T) { localClusterScript(t, true) }

func localClusterScript(t *testing.T, secure bool) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	httpBase, raftBase, gossipBase := freeBase(t, 3), freeBase(t, 3), freeBase(t, 3)
	env := append(os.Environ(), "RAFTCAT_CLUSTER_DIR="+dir, "RAFTCAT_TOKEN=",
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
	start, scheme := []string{"scripts/local-cluster.sh", "start"}, "http"
	if secure {
		start, scheme = append(start, "--secure"), "https"
	}
	if out := script(start...); !strings.Contains(out, "cluster of 3 ready") ||
		!strings.Contains(out, "export RAFTCAT_TOKEN=") || secure != strings.Contains(out, "transport security on") {
		t.Fatalf("start output:\n%s", out)
	}
	token := adminTokenFile(t, filepath.Join(dir, "admin.token"))
	node2 := fmt.Sprintf("%s://127.0.0.1:%d", scheme, httpBase+2)
	if secure {
		ca := filepath.Join(dir, "tls", "ca.pem")
		testcluster.TrustCA(t, ca)
		env = append(env, "RAFTCAT_CA_FILE="+ca)
		plain := fmt.Sprintf("http://127.0.0.1:%d/readyz", httpBase+2)
		if r := testcluster.Do(t, http.MethodGet, plain, nil); r.Status != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the HTTPS port: %d %s", r.Status, r.Raw)
		}
	}
	if r := testcluster.Do(t, http.MethodGet, node2+"/v1/cluster", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("a request without the token: %d %s", r.Status, r.Raw)
	}
	status := script("scripts/local-cluster.sh", "status")
	if strings.Count(status, `"state":"Leader"`) != 1 || strings.Count(status, "running") != 3 {
		t.Fatalf("status should show 3 running nodes and one leader:\n%s", status)
	}
	env = append(env, "RAFTCAT_TOKEN="+token)
	out := script("scripts/walkthrough.sh", node2)
	if !strings.Contains(out, "walk-through finished") {
		t.Fatalf("walk-through output:\n%s", out)
	}
	if stop := script("scripts/local-cluster.sh", "stop"); strings.Count(stop, "stopped") != 3 {
		t.Fatalf("stop output:\n%s", stop)
	}
}

// adminTokenFile reads an admin token file a script made, which only its
// owner may read.
func adminTokenFile(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	if len(token) < 16 {
		t.Fatalf("%s holds %q, not a token", path, token)
	}
	return token
}
