package fsm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// fuzzBase is a populated state and the log that built it: the log's
// entries are the seed corpus, the state what fuzzed commands apply to.
func fuzzBase(t testing.TB) *logGen {
	g := newLogGen(t, 4242)
	g.emit(&fsm.Init{Stamp: g.stamp(), MetastoreID: "ms", StorageRoot: metastoreRoot, CatalogID: "cat-u", SchemaID: "sch-d"})
	for i := range 2 {
		g.emit(&fsm.CreateCatalog{Stamp: g.stamp(), ID: g.id("cat"), Name: fmt.Sprintf("c%d", i)})
		for j := range 2 {
			g.emit(&fsm.CreateSchema{Stamp: g.stamp(), ID: g.id("sch"), CatalogName: fmt.Sprintf("c%d", i), Name: fmt.Sprintf("s%d", j)})
		}
	}
	for len(g.log) < 200 {
		g.step()
	}
	return g
}

// FuzzCommand feeds arbitrary log entries to the command decoder and, for
// those that decode, checks what the leader relies on before proposing:
// EncodeChecked accepts the command, the entry it produces decodes and
// applies on every replica without an error (an apply error stops the
// node), and a command that fails leaves the state as it was.
func FuzzCommand(f *testing.F) {
	g := fuzzBase(f)
	for _, entry := range g.log {
		f.Add(entry[0], entry[2:])
	}
	deep := strings.Repeat(`{"a":`, 9997) + "{}" + strings.Repeat("}", 9997)
	f.Add(byte(fsm.CmdCreateTable), []byte(`{"name":"t","catalog_name":"c0","schema_name":"s0","columns":{"columns":`+deep+`}}`))
	base := g.driver.State()
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		cmd, err := fsm.Decode(append([]byte{typ, 1}, payload...))
		if err != nil {
			return
		}
		data, err := fsm.EncodeChecked(cmd)
		if err != nil {
			return // refused before the log: a 400, nothing proposed
		}
		m := fsm.NewMachine()
		m.Replace(base)
		res, err := m.Apply(uint64(len(g.log)+1), data)
		if err != nil {
			t.Fatalf("%T passed EncodeChecked but does not apply: %v", cmd, err)
		}
		if (res.Err != nil || res.NoOp) && m.State() != base {
			t.Fatalf("%T failed (%v) but changed the state", cmd, res.Err)
		}
	})
}

func TestEncodeCheckedRefusesWhatTheLogCannotDecode(t *testing.T) {
	deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	cmd := &fsm.CreateTable{Name: "t", Columns: fsm.ColumnsSpec{Columns: []byte(deep)}}
	if _, err := fsm.Encode(cmd); err != nil {
		t.Fatalf("Encode refused the command itself (%v); the case needs one that encodes", err)
	}
	_, err := fsm.EncodeChecked(cmd)
	fe, ok := err.(*fsm.Error)
	if !ok || fe.Code != fsm.CodeInvalid || !strings.Contains(fe.Message, "cannot be stored") {
		t.Fatalf("EncodeChecked = %v, want an invalid-request error", err)
	}
	ok2 := &fsm.CreateTable{Name: "t", Columns: fsm.ColumnsSpec{Columns: []byte(`{"type":"struct","fields":[]}`)}}
	if _, err := fsm.EncodeChecked(ok2); err != nil {
		t.Fatalf("EncodeChecked refused a plain command: %v", err)
	}
}
