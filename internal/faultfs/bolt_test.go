package faultfs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

var bucket = []byte("b")

// boltChild is the child process's side of the bbolt tests, on the
// database at db. bolt-create makes it, durably; bolt-nosync commits once
// synced and once not, says "ready" and waits to be killed; bolt-loop
// commits until killed, saying "committed i" after each; bolt-view checks
// the database and prints its keys.
func boltChild(role, db string) error {
	d, err := bbolt.Open(db, 0o600, &bbolt.Options{Timeout: 10 * time.Second, ReadOnly: role == "bolt-view"})
	if err != nil {
		return err
	}
	switch role {
	case "bolt-create":
		return createDB(d)
	case "bolt-view":
		defer d.Close()
		return printKeys(d)
	case "bolt-nosync":
		if err := put(d, "synced"); err != nil {
			return err
		}
		d.NoSync = true
		if err := put(d, "unsynced"); err != nil {
			return err
		}
		fmt.Println("ready")
	case "bolt-loop":
		for i := 0; ; i++ {
			if err := put(d, strconv.Itoa(i)); err != nil {
				return err
			}
			fmt.Println("committed", i)
		}
	default:
		return fmt.Errorf("no child role %q", role)
	}
	select {}
}

// createDB closes the new database and syncs its directory: bbolt syncs
// the file but not the directory, so without that a cut takes the file
// away (raftcat syncs it after preallocating raft.db).
func createDB(d *bbolt.DB) error {
	path := d.Path()
	if err := d.Close(); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

func printKeys(d *bbolt.DB) error {
	return d.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		b := tx.Bucket(bucket)
		if b == nil {
			return fmt.Errorf("no bucket")
		}
		return b.ForEach(func(k, _ []byte) error {
			_, err := fmt.Printf("%s\n", k)
			return err
		})
	})
}

func put(d *bbolt.DB, key string) error {
	return d.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), []byte(strings.Repeat(key, 200)))
	})
}

// keys checks the database at db, through mmap in a process started now,
// and returns its keys.
func keys(t *testing.T, db string) []string {
	t.Helper()
	return strings.Fields(string(inChild(t, "bolt-view", db)))
}

// child starts a child process in role on db and returns it with the
// lines it prints.
func child(t *testing.T, role, db string) (*exec.Cmd, <-chan string) {
	cmd := childCmd(context.Background(), role, db)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, lines
}

// waitLine waits for the child's line that satisfies ok.
func waitLine(t *testing.T, lines <-chan string, ok func(string) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case l, open := <-lines:
			if !open {
				t.Fatal("the child exited early")
			}
			if ok(l) {
				return
			}
		case <-deadline:
			t.Fatal("the child said nothing in a minute")
		}
	}
}

// waitFor polls cond until it holds, for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in a minute", what)
		}
	}
}

// kill kills the child and waits for it, so none of its files is open,
// and returns the lines it printed last.
func kill(t *testing.T, cmd *exec.Cmd, lines <-chan string) []string {
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	cmd.Wait()
	return rest
}

// A commit bbolt synced survives the cut, one it did not sync (NoSync) is
// gone, and the database, read through mmap after the cut, is consistent.
func TestBoltUnsyncedCommitIsLost(t *testing.T) {
	m := mountWith(t, Options{}, nil)
	db := m.path("raft.db")
	inChild(t, "bolt-create", db)
	cmd, lines := child(t, "bolt-nosync", db)
	waitLine(t, lines, func(l string) bool { return l == "ready" })
	kill(t, cmd, lines)
	rep := m.cut(t, false)
	if rep.PagesDropped == 0 {
		t.Errorf("report %+v: the unsynced commit should have dropped pages", rep)
	}
	if got := keys(t, db); !slices.Equal(got, []string{"synced"}) {
		t.Errorf("keys after the cut: %q, want only the synced one", got)
	}
}

// Killed in the middle of a commit, then cut torn: every commit bbolt
// acknowledged is there and the database is consistent. A Slow fault
// holds the commit's first (or second) write in flight while the child is
// killed, so the kill finds that commit's pages unsynced.
func TestBoltAcknowledgedCommitsSurviveTornCut(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		m := mountWith(t, Options{Seed: seed, Logf: func(string, ...any) {}}, nil)
		db := m.path("raft.db")
		inChild(t, "bolt-create", db)
		cmd, lines := child(t, "bolt-loop", db)
		waitLine(t, lines, func(l string) bool { return l == "committed 30" })
		m.Inject(Fault{Kind: Slow, Path: "raft.db", Latency: 20 * time.Millisecond})
		writes := m.Stats().Writes + int64(seed%2)
		waitFor(t, "write in flight", func() bool { return m.Stats().Writes > writes })
		last := 30
		for _, l := range kill(t, cmd, lines) {
			last, _ = strconv.Atoi(strings.TrimPrefix(l, "committed "))
		}
		m.Clear()
		rep := m.cut(t, true)
		t.Logf("seed %d: killed after commit %d; %+v", seed, last, rep)
		if rep.Files != 1 {
			t.Errorf("seed %d: the kill should have found the commit's pages unsynced: %+v", seed, rep)
		}
		got := keys(t, db)
		for i := 0; i <= last; i++ {
			if !slices.Contains(got, strconv.Itoa(i)) {
				t.Errorf("seed %d: acknowledged commit %d is gone", seed, i)
			}
		}
	}
}
