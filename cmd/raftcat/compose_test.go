package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestComposeClusterSurvivesLosingAContainer runs the secure compose
// cluster the way the README does: scripts/cluster-up.sh --secure
// (authentication on with the admin token it makes, HTTPS with the CA it
// makes, mutual TLS between nodes, encrypted gossip; here in directories
// of the test's), the README's curl call, the walk-through against a
// node, the loss of the leader's container, more commits through the
// survivors, a drill, then scripts/cluster-down.sh --volumes. Every
// request carries the admin token and goes over HTTPS.
func TestComposeClusterSurvivesLosingAContainer(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	secrets := t.TempDir()
	env := append(os.Environ(), "RAFTCAT_SECRETS_DIR="+secrets, "RAFTCAT_CA_DIR="+t.TempDir(), "RAFTCAT_TOKEN=", "RAFTCAT_CA_FILE=")
	sh := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", args...)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	sh("scripts/cluster-down.sh", "--volumes") // a clean start, whatever an earlier run left
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "logs", "--tail", "40", "raftcat_node1_1").CombinedOutput()
			t.Logf("node1 log:\n%s", out)
		}
		cmd := exec.Command("bash", "scripts/cluster-down.sh", "--volumes")
		cmd.Dir = root
		_ = cmd.Run()
	})
	if out := sh("scripts/cluster-up.sh", "--secure"); !strings.Contains(out, "compose cluster of 3 ready") ||
		!strings.Contains(out, "authentication on") || !strings.Contains(out, "transport security on") {
		t.Fatalf("cluster-up:\n%s", out)
	}
	token := adminTokenFile(t, filepath.Join(secrets, "admin.token"))
	bearer := testcluster.Bearer(token)
	ca := filepath.Join(secrets, "ca.pem")
	testcluster.TrustCA(t, ca)
	urls := []string{"https://127.0.0.1:8081", "https://127.0.0.1:8082", "https://127.0.0.1:8083"}
	if r := testcluster.Do(t, http.MethodGet, urls[0]+"/v1/cluster", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("a request without the token: %d %s", r.Status, r.Raw)
	}
	if r := testcluster.Do(t, http.MethodGet, "http://127.0.0.1:8081/readyz", nil); r.Status != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the HTTPS port: %d %s", r.Status, r.Raw)
	}
	// The README's call, as it is printed.
	curl := exec.Command("curl", "-fsS", "--cacert", ca, "-H", "Authorization: Bearer "+token, urls[0]+"/v1/cluster")
	if out, err := curl.CombinedOutput(); err != nil || !strings.Contains(string(out), `"leader_id"`) {
		t.Fatalf("curl --cacert: %v\n%s", err, out)
	}
	env = append(env, "RAFTCAT_TOKEN="+token, "RAFTCAT_CA_FILE="+ca)
	if out := sh("scripts/walkthrough.sh", urls[1]); !strings.Contains(out, "walk-through finished") {
		t.Fatalf("walk-through:\n%s", out)
	}
	id := testcluster.CreateManaged(t, urls[0], urls[2], "unity", "default", "compose_t", bearer...)
	path := testcluster.TablePath("unity", "default", "compose_t")
	if r := testcluster.Do(t, http.MethodPost, urls[1]+path, testcluster.CommitBody(id, 1, testcluster.StagedName(1, "c")), bearer...); r.Status != http.StatusOK {
		t.Fatalf("commit v1: %d %s", r.Status, r.Raw)
	}

	leader := testcluster.Do(t, http.MethodGet, urls[0]+"/v1/cluster", nil, bearer...).Body["leader_id"].(string)
	if out, err := exec.Command("docker", "kill", "raftcat_"+leader+"_1").CombinedOutput(); err != nil {
		t.Fatalf("docker kill %s: %v\n%s", leader, err, out)
	}
	var survivor string
	for i, u := range urls {
		if fmt.Sprintf("node%d", i+1) != leader {
			survivor = u
		}
	}
	// The survivors elect a leader and keep serving; a client retries 503s.
	var r testcluster.Response
	testcluster.WaitFor(t, 60*time.Second, "a commit after losing the leader's container", func() bool {
		r = testcluster.Do(t, http.MethodPost, survivor+path, testcluster.CommitBody(id, 2, testcluster.StagedName(2, "c")), bearer...)
		return r.Status == http.StatusOK
	})
	load := testcluster.Do(t, http.MethodGet, survivor+path, nil, bearer...)
	if load.Body["latest-table-version"] != float64(2) {
		t.Fatalf("after losing %s: %s", leader, load.Raw)
	}

	// The lost container comes back; then a short drill against the compose
	// cluster: docker kill, pause and network disconnects under a commit load.
	if out, err := exec.Command("docker", "start", "raftcat_"+leader+"_1").CombinedOutput(); err != nil {
		t.Fatalf("docker start %s: %v\n%s", leader, err, out)
	}
	drillOut := t.TempDir()
	drill := exec.Command(raftcatBinary(t), "chaos", "--compose", "--token", token, "--ca-file", ca, "--duration", "15s", "--fault-every", "3s",
		"--fault-for", "1500ms", "--faults", "kill,pause,partition", "--seed", "5", "--tables", "2", "--out", drillOut)
	if out, err := drill.CombinedOutput(); err != nil || !strings.Contains(string(out), "authentication        token") {
		t.Fatalf("compose drill: %v\n%s", err, out)
	}
	if out := sh("scripts/cluster-down.sh"); !strings.Contains(out, "node1") {
		t.Fatalf("cluster-down:\n%s", out)
	}
}
