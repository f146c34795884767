package main

import (
	"bytes"
	"strings"
	"testing"
)

// `raftcat --help` (and -h) lists the commands, as `raftcat help` does;
// only `raftcat serve --help` lists the node's flags.
func TestHelpFlagListsCommands(t *testing.T) {
	var want bytes.Buffer
	if code := run([]string{"help"}, &want, &bytes.Buffer{}); code != 0 {
		t.Fatalf("raftcat help: exit %d", code)
	}
	for _, arg := range []string{"--help", "-h", "-help"} {
		var out, errOut bytes.Buffer
		if code := run([]string{arg}, &out, &errOut); code != 0 {
			t.Fatalf("raftcat %s: exit %d: %s", arg, code, errOut.String())
		}
		if out.String() != want.String() {
			t.Fatalf("raftcat %s printed %q, want the command list", arg, out.String()+errOut.String())
		}
		if !strings.Contains(out.String(), "raftcat snapshot save") {
			t.Fatalf("raftcat %s: no command list: %s", arg, out.String())
		}
	}
}

// Each flag of serve states its default once: the text's own "(default:
// ...)" or the value, and no empty default.
func TestServeHelpPrintsDefaultsOnce(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("raftcat serve --help: exit %d", code)
	}
	help := errOut.String()
	if !strings.Contains(help, "--raft-advertise") || !strings.Contains(help, `--http-addr [RAFTCAT_HTTP_ADDR]`) {
		t.Fatalf("serve help lacks flags: %s", help)
	}
	for _, line := range strings.Split(help, "\n") {
		if n := strings.Count(line, "(default"); n > 1 {
			t.Errorf("default printed %d times: %q", n, line)
		}
		if strings.Contains(line, `(default "")`) {
			t.Errorf("empty default printed: %q", line)
		}
	}
	if !strings.Contains(help, "(default: --raft-addr)\n") || !strings.Contains(help, `(default "127.0.0.1:8080")`) {
		t.Fatalf("defaults missing: %s", help)
	}
}
