package main

import (
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// poisonEntry is what releases that did not check entries before
// proposing could commit: a create whose columns nest past what the log
// decoder accepts once embedded in the entry.
func poisonEntry() []byte {
	deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	return append([]byte{byte(fsm.CmdCreateTable), 1},
		`{"time":1,"catalog_name":"unity","schema_name":"default","name":"bad","columns":{"columns":`+deep+`}}`...)
}

// appendEntry appends data to a stopped node's raft log in raft.db, after
// its last entry and in that entry's term, as if a leader had replicated it.
func appendEntry(t *testing.T, dataDir string, data []byte) uint64 {
	t.Helper()
	store, err := raftboltdb.NewBoltStore(filepath.Join(dataDir, "raft", "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	last, err := store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var prev raft.Log
	if err := store.GetLog(last, &prev); err != nil {
		t.Fatal(err)
	}
	if err := store.StoreLog(&raft.Log{Index: last + 1, Term: prev.Term, Type: raft.LogCommand, Data: data}); err != nil {
		t.Fatal(err)
	}
	return last + 1
}

func (p *proc) dataDir() string {
	for i, a := range p.args {
		if a == "--data-dir" {
			return p.args[i+1]
		}
	}
	return ""
}

func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// exitCode waits for the process to end and returns its exit status.
func (p *proc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("%s still runs after %s:\n%s", p.name, within, p.log.String())
	}
	return -1
}

func cli(t *testing.T, args ...string) (string, int) {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	return stdout + stderr, code
}

// A committed entry that no replica can apply stops every node with one
// log line and exit status 3, a restart refuses at once instead of crash
// looping, and the same skip decision on every node brings the cluster
// back with everything before and after the entry.
func TestEveryNodeHaltsOnAnEntryItCannotApplyAndResumesAfterASkip(t *testing.T) {
	procs := startProcesses(t, 3, "--raft-log-store", "boltdb") // appendEntry writes raft.db
	id := testcluster.CreateManaged(t, procs[0].url, procs[1].url, "unity", "default", "h")
	path := testcluster.TablePath("unity", "default", "h")
	r := testcluster.Do(t, http.MethodPost, procs[2].url+path, testcluster.CommitBody(id, 1, testcluster.StagedName(1, "h")))
	if r.Status != http.StatusOK {
		t.Fatalf("commit v1: %d %s", r.Status, r.Raw)
	}
	for _, p := range procs {
		testcluster.WaitFor(t, 20*time.Second, p.name+" applied the commit", func() bool { return appliedIndex(t, p.url) >= r.Index() })
	}
	for _, p := range procs {
		p.kill(t)
	}
	bad := poisonEntry()
	var index uint64
	for _, p := range procs {
		if i := appendEntry(t, p.dataDir(), bad); index != 0 && i != index {
			t.Fatalf("logs end at different indexes (%d, %d)", index, i)
		} else {
			index = i
		}
	}

	for _, p := range procs {
		p.start(t, raftcatBinary(t))
	}
	line := regexp.MustCompile(fmt.Sprintf(`(?m)^.*cannot apply log entry.* index=%d .*command_type=9 command=CreateTable .*$`, index))
	for _, p := range procs {
		if code := p.exitCode(t, 60*time.Second); code != exitHalted {
			t.Fatalf("%s exited %d, want %d:\n%s", p.name, code, exitHalted, p.log.String())
		}
		if n := len(line.FindAllString(p.log.String(), -1)); n != 1 {
			t.Fatalf("%s logged the halt %d times, want once:\n%s", p.name, n, p.log.String())
		}
	}

	procs[0].start(t, raftcatBinary(t))
	if code := procs[0].exitCode(t, 30*time.Second); code != exitHalted || !strings.Contains(procs[0].log.String(), "will not start") {
		t.Fatalf("restart of a halted node exited %d:\n%s", code, procs[0].log.String())
	}

	sha := cluster.EntryHash(bad)
	for _, p := range procs {
		out, code := cli(t, "log", "show", "--data-dir", p.dataDir())
		for _, want := range []string{fmt.Sprintf("entry %d", index), "9 CreateTable", sha, "decodes       no", "raftcat log skip"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("log show on %s (exit %d) lacks %q:\n%s", p.name, code, want, out)
			}
		}
		if out, code := cli(t, "log", "skip", "--data-dir", p.dataDir(), "--index", fmt.Sprint(index), "--sha256", strings.Repeat("0", 64)); code == 0 {
			t.Fatalf("a skip with the wrong hash was taken:\n%s", out)
		}
		if out, code := cli(t, "log", "skip", "--data-dir", p.dataDir(), "--index", fmt.Sprint(index), "--sha256", sha); code != 0 {
			t.Fatalf("log skip on %s: exit %d\n%s", p.name, code, out)
		}
	}

	for _, p := range procs {
		p.start(t, raftcatBinary(t))
	}
	for _, p := range procs {
		testcluster.WaitFor(t, 60*time.Second, p.name+" ready after the skip", p.ready)
	}
	var last testcluster.Response
	testcluster.WaitFor(t, 30*time.Second, "commit v2 after the skip", func() bool {
		last = testcluster.Do(t, http.MethodPost, procs[1].url+path, testcluster.CommitBody(id, 2, testcluster.StagedName(2, "h")))
		return last.Status != http.StatusServiceUnavailable
	})
	if last.Status != http.StatusOK {
		t.Fatalf("commit v2: %d %s", last.Status, last.Raw)
	}
	for _, p := range procs {
		testcluster.WaitFor(t, 20*time.Second, p.name+" caught up", func() bool { return appliedIndex(t, p.url) >= last.Index() })
		r := testcluster.Do(t, http.MethodGet, p.url+path, nil, "X-Raftcat-Consistency", "stale")
		if r.Body["latest-table-version"] != float64(2) {
			t.Fatalf("%s: latest-table-version %v, want 2: %s", p.name, r.Body["latest-table-version"], r.Raw)
		}
	}
	testcluster.WaitFor(t, 20*time.Second, "equal state digests", func() bool {
		d0, i0, ok0 := stateDigest(procs[0].url)
		for _, p := range procs[1:] {
			if d, i, ok := stateDigest(p.url); !ok0 || !ok || d != d0 || i != i0 {
				return false
			}
		}
		return true
	})
}
