package localcluster

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A cluster started with an admin token runs every node, and a node
// added later, with authentication on: readiness stays open, API routes
// need the token, and the token file is its owner's alone.
func TestStartWithAdminToken(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "raftcat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/raftcat/raftcat/cmd/raftcat").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	token := NewToken()
	cl, err := Start(ctx, Options{Bin: bin, Dir: filepath.Join(dir, "cluster"), Nodes: 3, AdminToken: token})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	fi, err := os.Stat(filepath.Join(dir, "cluster", AdminTokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v, mode %v", err, fi.Mode())
	}
	i, err := cl.Add()
	if err != nil {
		t.Fatal(err)
	}
	added := cl.URLs()[i]
	if err := WaitReady(ctx, []string{added}); err != nil {
		t.Fatal(err)
	}
	for _, u := range cl.URLs() {
		if code := get(t, u+"/v1/cluster", ""); code != http.StatusUnauthorized {
			t.Errorf("%s/v1/cluster without a token: %d, want 401", u, code)
		}
		if code := get(t, u+"/v1/cluster", token); code != http.StatusOK {
			t.Errorf("%s/v1/cluster with the admin token: %d, want 200", u, code)
		}
	}
	if code := get(t, added+"/api/2.1/unity-catalog/catalogs", token); code != http.StatusOK {
		t.Errorf("catalogs through the added node: %d", code)
	}
}

// Too short a token is refused before any node starts (a node would
// refuse it and never become ready).
func TestStartRefusesAShortAdminToken(t *testing.T) {
	_, err := Start(context.Background(), Options{Bin: "/nonexistent", Dir: t.TempDir(), Nodes: 1, AdminToken: "short"})
	if err == nil || !strings.Contains(err.Error(), "16 characters") {
		t.Fatalf("err %v", err)
	}
}

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
