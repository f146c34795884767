package main

import (
	"bytes"
	"slices"
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
	help := out.String()
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

// commands is every command line that takes flags or arguments.
var commands = [][]string{
	{"serve"}, {"healthcheck"}, {"members"}, {"snapshot", "save"}, {"snapshot", "inspect"}, {"snapshot", "restore"},
	{"transfer-leadership"}, {"leave"}, {"remove-node"}, {"chaos"}, {"chaos", "check"}, {"bench"}, {"bench", "series"}, {"bench", "scale"},
	{"log", "show"}, {"log", "skip"}, {"auth", "principal", "create"}, {"auth", "principal", "list"},
	{"auth", "principal", "delete"}, {"auth", "token", "create"}, {"auth", "token", "revoke"}, {"auth", "whoami"},
	{"tls", "ca", "create"}, {"tls", "cert", "create"}, {"gossip", "keygen"}, {"gossip", "keys", "list"},
	{"gossip", "keys", "install"}, {"gossip", "keys", "use"}, {"gossip", "keys", "remove"},
}

// groups are the commands that only dispatch to others.
var groups = [][]string{{"snapshot"}, {"log"}, {"auth"}, {"auth", "principal"}, {"auth", "token"}, {"tls"}, {"tls", "ca"},
	{"tls", "cert"}, {"gossip"}, {"gossip", "keys"}}

// Every command and group answers --help on stdout with exit 0, and a bad
// flag with one line on stderr that names it as --name and points at
// --help, with exit 2.
func TestEveryCommandHelpsAndRefusesABadFlagInOneLine(t *testing.T) {
	for _, cmd := range append(append([][]string{}, commands...), groups...) {
		name := strings.Join(cmd, " ")
		for _, h := range []string{"--help", "-h"} {
			var out, errOut bytes.Buffer
			if code := run(append(slices.Clone(cmd), h), &out, &errOut); code != 0 || out.Len() == 0 || errOut.Len() != 0 {
				t.Errorf("raftcat %s %s: exit %d, %d bytes on stdout, stderr %q", name, h, code, out.Len(), errOut.String())
			}
			if !strings.Contains(out.String(), "raftcat "+name) {
				t.Errorf("raftcat %s %s does not show the command's use: %s", name, h, out.String())
			}
		}
	}
	for _, cmd := range commands {
		name := strings.Join(cmd, " ")
		var out, errOut bytes.Buffer
		code := run(append(slices.Clone(cmd), "--no-such-flag"), &out, &errOut)
		msg := errOut.String()
		if code != 2 || out.Len() != 0 || strings.Count(msg, "\n") != 1 ||
			!strings.Contains(msg, "--no-such-flag") || !strings.Contains(msg, "'raftcat "+name+" --help'") {
			t.Errorf("raftcat %s --no-such-flag: exit %d, stdout %q, stderr %q", name, code, out.String(), msg)
		}
	}
}

// The command list names no command the test above leaves out.
func TestEveryListedCommandIsChecked(t *testing.T) {
	known := map[string]bool{"version": true}
	for _, c := range append(append([][]string{}, commands...), groups...) {
		known[strings.Join(c, " ")] = true
	}
	for _, line := range strings.Split(usage, "\n") {
		f := strings.Fields(strings.SplitN(strings.TrimSpace(line), "  ", 2)[0])
		if len(f) < 2 || f[0] != "raftcat" {
			continue
		}
		var words []string
		for _, w := range f[1:] {
			if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "-") || strings.ToUpper(w) == w {
				break
			}
			words = append(words, w)
		}
		for _, alt := range strings.Split(strings.Join(words, " "), "|") {
			if name := strings.TrimSpace(alt); name != "" && !known[name] && !known[words[0]+" "+name] {
				t.Errorf("raftcat --help lists %q, which no test checks", name)
			}
		}
	}
}

// --addr takes a bare host:port, with the scheme the TLS flags imply.
func TestAddrTakesHostPort(t *testing.T) {
	for _, c := range []struct {
		addr string
		tls  bool
		want string
	}{
		{"127.0.0.1:18080", false, "http://127.0.0.1:18080"},
		{"node1:8080", true, "https://node1:8080"},
		{"https://node1:8080/", false, "https://node1:8080"},
		{"[::1]:8080", false, "http://[::1]:8080"},
	} {
		if got, err := nodeURL(c.addr, c.tls); err != nil || got != c.want {
			t.Errorf("nodeURL(%q, %v) = %q, %v; want %q", c.addr, c.tls, got, err, c.want)
		}
	}
	for _, bad := range []string{"node1", "ftp://node1:21", "http://"} {
		if got, err := nodeURL(bad, false); err == nil {
			t.Errorf("nodeURL(%q) = %q, want an error", bad, got)
		}
	}
}
