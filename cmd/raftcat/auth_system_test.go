package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// A cluster of real processes started with just --auth=token and the
// same admin token file works: the admin token is the admin's, and the
// CLI manages principals and tokens with it.
func TestAuthCommandsAgainstProcesses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "admin.token")
	const admin = "process-admin-token-0123456789"
	if err := os.WriteFile(file, []byte(admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	procs := startProcesses(t, 3, "--auth=token", "--admin-token-file", file)
	addr := procs[1].url
	testcluster.WaitFor(t, 30*time.Second, "the admin exists", func() bool {
		code, out, _ := runCLI(t, "auth", "whoami", "--addr", addr, "--token", admin)
		return code == 0 && strings.HasPrefix(out, "admin (token, metastore admin)")
	})
	if code, _, errOut := runCLI(t, "members", "--addr", addr); code != 1 || !strings.Contains(errOut, "HTTP 401") {
		t.Fatalf("members without a token: exit %d, %q", code, errOut)
	}
	t.Setenv("RAFTCAT_TOKEN", admin)
	if code, out, errOut := runCLI(t, "members", "--addr", procs[2].url); code != 0 || !strings.Contains(out, "leader") {
		t.Fatalf("members with RAFTCAT_TOKEN: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "auth", "principal", "create", "--addr", addr, "alice"); code != 0 {
		t.Fatalf("principal create: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "auth", "principal", "create", "--service", "--addr", addr, "etl")
	if code != 0 || !regexp.MustCompile(`client_secret: +\S{20,}`).MatchString(out) {
		t.Fatalf("service principal create: exit %d: %q %q", code, out, errOut)
	}
	code, token, errOut := runCLI(t, "auth", "token", "create", "--ttl", "1h", "--addr", addr, "alice")
	if code != 0 || !strings.HasPrefix(token, "rct_") {
		t.Fatalf("token create: exit %d: %q %q", code, token, errOut)
	}
	token = strings.TrimSpace(token)
	id := regexp.MustCompile(`token (\S+) for alice`).FindStringSubmatch(errOut)
	if id == nil {
		t.Fatalf("token create did not name the token's id: %q", errOut)
	}
	if code, out, _ := runCLI(t, "auth", "principal", "list", "--addr", procs[0].url); code != 0 || !strings.Contains(out, "alice") || !strings.Contains(out, "etl") {
		t.Fatalf("principal list: exit %d: %q", code, out)
	}
	if code, out, _ := runCLI(t, "auth", "whoami", "--addr", procs[2].url, "--token", token); code != 0 || out != "alice (token)\n" {
		t.Fatalf("whoami as alice: exit %d: %q", code, out)
	}
	if code, _, errOut := runCLI(t, "auth", "principal", "list", "--addr", addr, "--token", token); code != 1 || !strings.Contains(errOut, "HTTP 403") {
		t.Fatalf("principal list as alice: exit %d: %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "auth", "token", "revoke", "--addr", addr, id[1]); code != 0 {
		t.Fatalf("token revoke: exit %d: %q", code, errOut)
	}
	for _, p := range procs {
		if code, _, errOut := runCLI(t, "auth", "whoami", "--addr", p.url, "--token", token); code != 1 || !strings.Contains(errOut, "HTTP 401") {
			t.Fatalf("whoami with a revoked token on %s: exit %d: %q", p.name, code, errOut)
		}
	}
	for _, p := range procs {
		if strings.Contains(p.log.String(), admin) || strings.Contains(p.log.String(), token[strings.Index(token, ".")+1:]) {
			t.Fatalf("%s logged a token", p.name)
		}
	}
}

// A node refuses --auth=token without an admin token file, and warns when
// it serves everyone as anyone on a non-loopback address.
func TestAuthModeStartChecks(t *testing.T) {
	bin := raftcatBinary(t)
	ports := freePorts(t, 3)
	base := []string{"serve", "--data-dir", t.TempDir(), "--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[2])}
	out, err := exec.Command(bin, append(base, "--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--auth=token")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--auth=token needs --admin-token-file") {
		t.Fatalf("--auth=token without a token file: %v: %s", err, out)
	}
	p := &proc{name: "open", url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		args: append(base, "--http-addr", fmt.Sprintf("0.0.0.0:%d", ports[0]), "--http-advertise", fmt.Sprintf("127.0.0.1:%d", ports[0]))}
	p.start(t, bin)
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	testcluster.WaitFor(t, 30*time.Second, "the node ready", p.ready)
	if !strings.Contains(p.log.String(), "--auth=none on a non-loopback address") {
		t.Fatalf("no warning in the log:\n%s", p.log.String())
	}
	if r := testcluster.Do(t, http.MethodGet, p.url+"/api/2.1/unity-catalog/catalogs", nil); r.Status != http.StatusOK {
		t.Fatalf("--auth=none refused a request: %d", r.Status)
	}
}
