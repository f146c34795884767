package fsm

import (
	"reflect"
	"strings"
	"testing"
)

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil || !strings.Contains(r.(string), want) {
			t.Fatalf("panic = %v, want %q", r, want)
		}
	}()
	f()
}

func TestRegistriesRefuseMistakes(t *testing.T) {
	noop := func(*tx, uint64, *DeleteTable) Result { return Result{} }
	mustPanic(t, "registered twice", func() { registerCommand(CmdDeleteTable, noop) })
	mustPanic(t, "registered as 99", func() { registerCommand(CommandType(99), noop) })
	mustPanic(t, "registered twice", func() { registerRecord(RecordTable, recordSpec{}) })
	mustPanic(t, "reserved", func() { registerRecord(0, recordSpec{}) })
}

func TestEveryKindIsRegistered(t *testing.T) {
	for ct := CmdInit; ct <= CmdChangeGossipKey; ct++ {
		spec := commandSpecs[ct]
		if spec == nil || spec.newCmd().Type() != ct {
			t.Fatalf("command type %d not registered", ct)
		}
		if want := reflect.TypeOf(spec.newCmd()).Elem().Name(); ct.String() != want {
			t.Fatalf("command type %d is named %q, want %q", ct, ct.String(), want)
		}
	}
	for kind := RecordMetastore; kind <= RecordGossipKeyring; kind++ {
		if recordSpecs[kind] == nil {
			t.Fatalf("record kind %d not registered", kind)
		}
	}
}

// Records come in kind order, each kind in key order.
func TestRecordsComeInKindOrder(t *testing.T) {
	s := NewState()
	tx := s.begin()
	applyInit(tx, 1, &Init{MetastoreID: "m", CatalogID: "c", SchemaID: "s"})
	applyCreateNamespace(tx, 2, &CreateNamespace{ID: "n", Path: []string{DefaultCatalog, DefaultSchema, "x"}})
	applyCreateCatalog(tx, 3, &CreateCatalog{ID: "c2", Name: "a"})
	var kinds []byte
	var names []string
	if err := tx.commit().WriteRecords(func(kind byte, payload []byte) error {
		kinds = append(kinds, kind)
		names = append(names, string(payload[:min(len(payload), 20)]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []byte{RecordMetastore, RecordCatalog, RecordCatalog, RecordSchema, RecordNamespace}
	if string(kinds) != string(want) || !strings.Contains(names[1], `"c2"`) {
		t.Fatalf("kinds %v (%q), want %v", kinds, names, want)
	}
}

func TestCommandNames(t *testing.T) {
	for ct, want := range map[CommandType]string{CmdInit: "Init", CmdCreateStagingTable: "CreateStagingTable",
		CmdUpdateTable: "UpdateTable", CmdRenameTable: "RenameTable", CmdCreateNamespace: "CreateNamespace",
		CmdReplaceIcebergView: "ReplaceIcebergView", 200: "unknown(200)"} {
		if got := ct.String(); got != want {
			t.Errorf("%d is named %q, want %q", uint8(ct), got, want)
		}
	}
}
