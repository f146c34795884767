package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// runCLIWithStdin is runCLI with stdin.
func runCLIWithStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(raftcatBinary(t), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run raftcat %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// keygen makes a key with the CLI and returns it with its fingerprint.
func keygen(t *testing.T) (string, string) {
	t.Helper()
	code, out, errOut := runCLI(t, "gossip", "keygen")
	key := strings.TrimSpace(out)
	raw, err := base64.StdEncoding.DecodeString(key)
	if code != 0 || err != nil || len(raw) != 32 {
		t.Fatalf("gossip keygen: exit %d, %q %q", code, out, errOut)
	}
	return key, clusterapi.KeyFingerprint(raw)
}

// listRow matches a key's row of `gossip keys list`.
func listRow(fp, installed, primary, place string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + fp + ` +` + installed + ` +` + primary + ` +` + place + `$`)
}

// The gossip key of a cluster of processes run with --gossip-key-file and
// --auth=token is rotated with the CLI: keygen, keys install, use and
// remove (the key from stdin or as an argument), each step waited for
// with keys list. No key reaches a log or the audit log.
func TestGossipKeyRotationWithTheCLI(t *testing.T) {
	dir := t.TempDir()
	const admin = "gossip-admin-token-0123456789"
	oldKey, oldFP := keygen(t)
	newKey, newFP := keygen(t)
	tokenFile, keyFile := filepath.Join(dir, "admin.token"), filepath.Join(dir, "gossip.key")
	for file, content := range map[string]string{tokenFile: admin, keyFile: oldKey + "\n"} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	procs := startProcesses(t, 3, "--auth=token", "--admin-token-file", tokenFile, "--gossip-key-file", keyFile, "--audit-log", "-")
	addr := procs[1].url
	list := func() string {
		t.Helper()
		code, out, errOut := runCLI(t, "gossip", "keys", "list", "--addr", addr, "--token", admin)
		if code != 0 {
			t.Fatalf("keys list: exit %d: %s", code, errOut)
		}
		return out
	}
	waitList := func(what string, rows ...*regexp.Regexp) {
		t.Helper()
		testcluster.WaitFor(t, 60*time.Second, what, func() bool {
			out := list()
			for _, r := range rows {
				if !r.MatchString(out) {
					return false
				}
			}
			return strings.Count(out, "\n") == 1+len(rows)
		})
	}
	waitList("every node to gossip the key it started with", listRow(oldFP, "3/3", "3/3", "-"))
	if code, _, errOut := runCLI(t, "gossip", "keys", "list", "--addr", addr); code != 1 || !strings.Contains(errOut, "HTTP 401") {
		t.Fatalf("keys list without a token: exit %d: %q", code, errOut)
	}

	t.Setenv("RAFTCAT_TOKEN", admin)
	code, out, errOut := runCLIWithStdin(t, newKey+"\n", "gossip", "keys", "install", "--addr", procs[2].url, "-")
	if code != 0 || !listRow(newFP, `\d/3`, "0/3", "installed").MatchString(out) {
		t.Fatalf("keys install: exit %d: %q %q", code, out, errOut)
	}
	waitList("every node to install the new key", listRow(oldFP, "3/3", "3/3", "primary"), listRow(newFP, "3/3", "0/3", "installed"))
	if code, _, errOut := runCLIWithStdin(t, oldKey, "gossip", "keys", "remove", "--addr", addr, "-"); code != 1 || !strings.Contains(errOut, "HTTP 409") {
		t.Fatalf("removal of the primary key: exit %d: %q", code, errOut)
	}
	if code, out, errOut := runCLIWithStdin(t, newKey, "gossip", "keys", "use", "--addr", addr, "-"); code != 0 {
		t.Fatalf("keys use: exit %d: %q %q", code, out, errOut)
	}
	waitList("every node to encrypt with the new key", listRow(newFP, "3/3", "3/3", "primary"), listRow(oldFP, "3/3", "0/3", "installed"))
	if code, out, errOut := runCLI(t, "gossip", "keys", "remove", "--addr", procs[0].url, oldKey); code != 0 {
		t.Fatalf("keys remove: exit %d: %q %q", code, out, errOut)
	}
	waitList("every node to drop the old key", listRow(newFP, "3/3", "3/3", "primary"))

	for _, p := range procs {
		if log := p.log.String(); strings.Contains(log, oldKey) || strings.Contains(log, newKey) {
			t.Fatalf("%s logged a gossip key", p.name)
		}
	}
	if !strings.Contains(procs[0].log.String(), `"action":"POST /v1/cluster/gossip-keys"`) {
		t.Fatal("the removal through node1 was not audited")
	}
}

// `raftcat gossip --help` lists the commands and the rotation's steps.
func TestGossipHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"gossip", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"gossip keygen", "keys list", "keys install|use|remove", "1. ", "2. ", "3. "} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("help lacks %q: %s", want, out.String())
		}
	}
	if code := run([]string{"gossip", "keys", "rotate"}, &out, &errOut); code != 2 {
		t.Fatalf("unknown command: exit %d", code)
	}
}
