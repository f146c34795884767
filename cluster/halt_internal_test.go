package cluster

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
)

func openSingle(t *testing.T, dir string) (*Node, error) {
	t.Helper()
	return Open(Config{NodeID: "n1", DataDir: dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
		BootstrapExpect: 1, StorageRoot: "file://" + dir + "/warehouse",
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

func waitLeading(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		if _, _, err := n.LinearizableState(ctx); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("node never became a ready leader")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func mustPropose(t *testing.T, n *Node, cmd fsm.Command) {
	t.Helper()
	res, _, err := n.Propose(context.Background(), cmd)
	if err != nil || res.Err != nil {
		t.Fatalf("propose %T: %v %v", cmd, err, res.Err)
	}
}

// poison is a committed entry no replica can decode: a log written before
// the leader checked its entries could hold one.
func poison() []byte {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	return append([]byte{byte(fsm.CmdCreateTable), 1}, []byte(`{"name":"t","columns":{"columns":`+deep+`}}`)...)
}

// A node that cannot apply a committed entry halts without applying it or
// anything after it, refuses to start again until an operator decides,
// and after a skip decision applies every later entry.
func TestHaltOnAnEntryThatCannotApplyAndSkipIt(t *testing.T) {
	dir := t.TempDir()
	n, err := openSingle(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	waitLeading(t, n)
	mustPropose(t, n, &fsm.CreateCatalog{ID: "c-before", Name: "before"})
	bad := poison()
	if err := n.raft.Apply(bad, 0).Error(); err != nil {
		t.Fatal(err)
	}
	<-n.Halted()
	_, _, err = n.Propose(context.Background(), &fsm.CreateCatalog{ID: "c-after", Name: "after"})
	if !errors.Is(err, ErrShutdown) {
		t.Fatalf("a write to a halted node = %v, want it refused as shut down (a 503)", err)
	}
	h, ok := n.HaltInfo()
	if !ok || h.CommandType != uint8(fsm.CmdCreateTable) || h.CommandName != "CreateTable" || h.SHA256 != EntryHash(bad) {
		t.Fatalf("halt = %+v", h)
	}
	if _, err := n.fsm.Snapshot(); !errors.Is(err, ErrHalted) {
		t.Fatalf("a halted machine took a snapshot (%v): it would record the entry as applied", err)
	}
	if st, _ := n.StaleState(); hasCatalog(st, "after") {
		t.Fatal("an entry after the halted one was applied")
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}

	if _, err := openSingle(t, dir); !errors.Is(err, ErrHalted) || !strings.Contains(err.Error(), "raftcat log show") {
		t.Fatalf("restart of a halted node = %v, want ErrHalted naming the way out", err)
	}
	marker, ok, err := ReadHalt(dir)
	if err != nil || !ok || marker.Index != h.Index {
		t.Fatalf("marker = %+v %v %v", marker, ok, err)
	}
	if err := SkipEntry(dir, h.Index, strings.Repeat("0", 64)); err != nil {
		t.Fatal(err)
	}
	if _, err := openSingle(t, dir); err == nil {
		t.Fatal("a decision about other bytes at that index cleared the halt")
	}
	if err := SkipEntry(dir, h.Index, h.SHA256); err == nil {
		t.Fatal("two different decisions for one index were both recorded")
	}
}

func TestSkipDecisionAppliesTheEntryAsANoOp(t *testing.T) {
	dir := t.TempDir()
	n, err := openSingle(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	waitLeading(t, n)
	mustPropose(t, n, &fsm.CreateCatalog{ID: "c-before", Name: "before"})
	bad := poison()
	f := n.raft.Apply(bad, 0)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	index := f.Index()
	<-n.Halted()
	// An entry committed after the halted one (the halted node proposes
	// nothing more, but a log can hold later entries from another leader).
	after, err := fsm.Encode(&fsm.CreateCatalog{ID: "c-after", Name: "after"})
	if err != nil {
		t.Fatal(err)
	}
	if res := n.raft.Apply(after, 0); res.Error() != nil || !errors.Is(res.Response().(error), ErrHalted) {
		t.Fatalf("an entry after the halted one: %v %v", res.Error(), res.Response())
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := SkipEntry(dir, index, EntryHash(bad)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ReadHalt(dir); ok {
		t.Fatal("the skip decision left the halt marker")
	}
	n, err = openSingle(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	waitLeading(t, n)
	st, _ := n.StaleState()
	for _, name := range []string{"before", "after"} {
		if _, ok := st.Catalog(name); !ok {
			t.Fatalf("catalog %q missing after the skip", name)
		}
	}
	mustPropose(t, n, &fsm.CreateCatalog{ID: "c-later", Name: "later"})
	if _, err := os.Stat(filepath.Join(dir, skipFile)); err != nil {
		t.Fatal(err)
	}
}

func hasCatalog(st *fsm.State, name string) bool {
	_, ok := st.Catalog(name)
	return ok
}

// A leader stamps the current rules only while every server of the
// configuration gossips that it knows them.
func TestRulesAreTheLowestEveryServerKnows(t *testing.T) {
	n, err := openSingle(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	waitLeading(t, n)
	if got := n.Rules(); got != fsm.CurrentRules {
		t.Fatalf("alone: rules %d, want %d", got, fsm.CurrentRules)
	}
	if err := n.raft.AddNonvoter("unseen", "127.0.0.1:1", 0, 0).Error(); err != nil {
		t.Fatal(err)
	}
	if got := n.Rules(); got != fsm.RulesOriginal {
		t.Fatalf("with a server gossip has not seen: rules %d, want %d", got, fsm.RulesOriginal)
	}
	cmd := &fsm.CreateCatalog{Name: "c"}
	n.stampRules(cmd)
	if cmd.Rules != fsm.RulesOriginal {
		t.Fatalf("stamped rules %d", cmd.Rules)
	}
}
