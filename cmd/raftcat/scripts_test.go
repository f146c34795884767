package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// walkthroughs are the walk-through scripts, every one of which a
// cluster started by scripts/local-cluster.sh must pass.
var walkthroughs = []string{"walkthrough.sh", "walkthrough-iceberg.sh", "walkthrough-sharing.sh",
	"walkthrough-lance.sh", "walkthrough-transaction.sh"}

// TestLocalClusterScriptAndWalkthrough runs what the README tells a new
// user to run: scripts/local-cluster.sh start|status|stop and every
// walk-through script against a follower of that cluster, with
// authentication on as the script starts it: the walk-throughs send the
// admin token the script made, and a request without it is refused.
// The script builds raftcat itself.
func TestLocalClusterScriptAndWalkthrough(t *testing.T) { localClusterScript(t, 3, "", "") }

// TestWalkthroughScripts runs every walk-through script, twice (they can
// run again on the same catalog), against a fresh single node and a fresh
// three-node cluster, each with authentication and TLS off (--insecure)
// and on (start --secure: the nodes serve HTTPS with the CA the script
// made, a plain HTTP request is refused, they talk to each other over
// mutual TLS and encrypt gossip; the walk-throughs and status reach them
// trusting that CA). With a wrong token every script fails at once, with
// the status it got.
func TestWalkthroughScripts(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		for _, mode := range []string{"--insecure", "--secure"} {
			t.Run(fmt.Sprintf("%d%s", nodes, mode), func(t *testing.T) { localClusterScript(t, nodes, mode, raftcatBinary(t)) })
		}
	}
}

// localClusterScript starts a cluster of n nodes with local-cluster.sh
// start and mode ("", --secure or --insecure), running bin (or, when
// empty, building one), and runs the walk-throughs against its last node.
func localClusterScript(t *testing.T, n int, mode, bin string) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	httpBase, raftBase, gossipBase := freeBase(t, n), freeBase(t, n), freeBase(t, n)
	env := append(os.Environ(), "RAFTCAT_CLUSTER_DIR="+dir, "RAFTCAT_TOKEN=", "RAFTCAT_CA_FILE=", "TMPDIR="+t.TempDir(),
		fmt.Sprintf("RAFTCAT_HTTP_BASE=%d", httpBase), fmt.Sprintf("RAFTCAT_RAFT_BASE=%d", raftBase),
		fmt.Sprintf("RAFTCAT_GOSSIP_BASE=%d", gossipBase), "RAFTCAT_BIN="+bin)
	run := func(args ...string) (string, error) {
		cmd := exec.Command("bash", args...)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	script := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	t.Cleanup(func() {
		_, _ = run("scripts/local-cluster.sh", "stop")
		if t.Failed() {
			for i := 1; i <= n; i++ {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d.log", i)))
				t.Logf("---- node%d log ----\n%s", i, b)
			}
		}
	})
	secure, auth := mode == "--secure", mode != "--insecure"
	start, scheme := []string{"scripts/local-cluster.sh", "start", strconv.Itoa(n)}, "http"
	if mode != "" {
		start = append(start, mode)
	}
	if secure {
		scheme = "https"
	}
	if out := script(start...); !strings.Contains(out, fmt.Sprintf("cluster of %d ready", n)) ||
		(bin == "") != strings.Contains(out, "building raftcat") || auth != strings.Contains(out, "export RAFTCAT_TOKEN=") ||
		secure != strings.Contains(out, "transport security on") {
		t.Fatalf("start output:\n%s", out)
	}
	node := fmt.Sprintf("%s://127.0.0.1:%d", scheme, httpBase+n)
	if secure {
		ca := filepath.Join(dir, "tls", "ca.pem")
		testcluster.TrustCA(t, ca)
		env = append(env, "RAFTCAT_CA_FILE="+ca)
		plain := fmt.Sprintf("http://127.0.0.1:%d/readyz", httpBase+n)
		if r := testcluster.Do(t, http.MethodGet, plain, nil); r.Status != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the HTTPS port: %d %s", r.Status, r.Raw)
		}
	}
	want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusOK}[auth]
	if r := testcluster.Do(t, http.MethodGet, node+"/v1/cluster", nil); r.Status != want {
		t.Fatalf("a request without a token: %d %s", r.Status, r.Raw)
	}
	status := script("scripts/local-cluster.sh", "status")
	if strings.Count(status, `"state":"Leader"`) != 1 || strings.Count(status, "running") != n {
		t.Fatalf("status should show %d running nodes and one leader:\n%s", n, status)
	}
	if auth {
		env = append(env, "RAFTCAT_TOKEN=wrong-token")
		for _, w := range walkthroughs {
			if out, err := run("scripts/"+w, node); err == nil || !strings.Contains(out, "401") {
				t.Fatalf("%s with a wrong token: %v\n%s", w, err, out)
			}
		}
		env = append(env, "RAFTCAT_TOKEN="+adminTokenFile(t, filepath.Join(dir, "admin.token")))
	}
	for round := 0; round < 2; round++ {
		for _, w := range walkthroughs {
			if out := script("scripts/"+w, node); !strings.Contains(out, "walk-through finished") {
				t.Fatalf("%s output:\n%s", w, out)
			}
		}
	}
	if stop := script("scripts/local-cluster.sh", "stop"); strings.Count(stop, "stopped") != n {
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

// TestWalkthroughPagesShowTheirScripts checks that each page under docs/
// shows exactly the steps its walk-through script runs: the shell blocks
// the page holds between "<!-- steps of scripts/X -->" and
// "<!-- end of steps -->" are, in order, the script's lines between
// "# >>> steps" and "# <<< steps", one block per blank-line-separated
// part. A step changed on one side only fails it.
func TestWalkthroughPagesShowTheirScripts(t *testing.T) {
	pages := map[string][]string{
		"docs/iceberg.md":       {"walkthrough-iceberg.sh"},
		"docs/delta-sharing.md": {"walkthrough-sharing.sh"},
		"docs/lance.md":         {"walkthrough-lance.sh", "walkthrough-transaction.sh"},
	}
	for page, scripts := range pages {
		doc := readRepoFile(t, page)
		for _, name := range scripts {
			shown, err := pageSteps(doc, "scripts/"+name)
			if err != nil {
				t.Errorf("%s: %v", page, err)
				continue
			}
			run, err := scriptSteps(readRepoFile(t, "scripts/"+name))
			if err != nil {
				t.Errorf("scripts/%s: %v", name, err)
				continue
			}
			if err := sameSteps(shown, run); err != nil {
				t.Errorf("%s and scripts/%s differ: %v", page, name, err)
			}
		}
	}
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// pageSteps is the shell blocks of doc between the markers of script.
func pageSteps(doc, script string) ([]string, error) {
	open, end := "<!-- steps of "+script+" -->", "<!-- end of steps -->"
	i := strings.Index(doc, open)
	if i < 0 {
		return nil, fmt.Errorf("no %q marker", open)
	}
	rest := doc[i+len(open):]
	j := strings.Index(rest, end)
	if j < 0 {
		return nil, fmt.Errorf("no %q after %q", end, open)
	}
	var blocks []string
	for _, part := range strings.Split(rest[:j], "```sh\n")[1:] {
		k := strings.Index(part, "```")
		if k < 0 {
			return nil, fmt.Errorf("an unclosed block after %q", open)
		}
		blocks = append(blocks, strings.TrimSpace(part[:k]))
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("no ```sh block after %q", open)
	}
	return blocks, nil
}

// scriptSteps is the blank-line-separated parts of a script between its
// step markers.
func scriptSteps(script string) ([]string, error) {
	i, j := strings.Index(script, "\n# >>> steps"), strings.Index(script, "\n# <<< steps")
	if i < 0 || j < i {
		return nil, fmt.Errorf("no # >>> steps ... # <<< steps markers")
	}
	body := script[i+1 : j]
	body = body[strings.Index(body, "\n")+1:] // past the marker line
	var parts []string
	for _, p := range strings.Split(body, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// sameSteps names the first step where shown and run differ.
func sameSteps(shown, run []string) error {
	for i := 0; i < len(shown) || i < len(run); i++ {
		switch {
		case i >= len(shown):
			return fmt.Errorf("the page lacks block %d:\n%s", i+1, run[i])
		case i >= len(run):
			return fmt.Errorf("the script lacks block %d:\n%s", i+1, shown[i])
		case shown[i] != run[i]:
			return fmt.Errorf("block %d differs:\npage:\n%s\nscript:\n%s", i+1, shown[i], run[i])
		}
	}
	return nil
}
