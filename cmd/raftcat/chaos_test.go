package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/chaos"
)

func writeHistory(t *testing.T, ops []chaos.Op) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := chaos.WriteHistory(f, ops); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestChaosCheckCommand(t *testing.T) {
	good := []chaos.Op{
		{Client: 0, Table: "t", Op: chaos.OpCommit, Version: 1, FileName: "a", InvokeNs: 0, CompleteNs: 1, Outcome: chaos.OutcomeOK},
		{Client: 1, Table: "t", Op: chaos.OpLoad, LatestVersion: 1, Final: true, Commits: map[int64]string{1: "a"}, InvokeNs: 2, CompleteNs: 3, Outcome: chaos.OutcomeOK},
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"chaos", "check", writeHistory(t, good)}, &out, &errOut); code != 0 {
		t.Fatalf("good history: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	lost := append([]chaos.Op{}, good...)
	lost[1].LatestVersion, lost[1].Commits = 0, nil
	out.Reset()
	if code := run([]string{"chaos", "check", writeHistory(t, lost)}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "lost") {
		t.Fatalf("history with a lost commit: exit %d\n%s", code, out.String())
	}
	if code := run([]string{"chaos", "check"}, &out, &errOut); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
}
