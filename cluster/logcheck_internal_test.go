package cluster

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestCheckedLogReadsOlderEntries: entries an older release stored
// without a checksum read back as they were; new ones carry it, lose it
// on the way out, and fail it once their data or term changes.
func TestCheckedLogReadsOlderEntries(t *testing.T) {
	store, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	old := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("older release")}
	if err := store.StoreLog(old); err != nil {
		t.Fatal(err)
	}
	c := checkedLog{LogStore: store}
	fresh := &raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("this release")}
	if err := c.StoreLogs([]*raft.Log{fresh}); err != nil || fresh.Extensions != nil {
		t.Fatalf("StoreLogs = %v, and it changed raft's own entry: %q", err, fresh.Extensions)
	}
	for _, want := range []*raft.Log{old, fresh} {
		var got raft.Log
		if err := c.GetLog(want.Index, &got); err != nil || string(got.Data) != string(want.Data) || got.Extensions != nil {
			t.Fatalf("entry %d = %+v, %v", want.Index, got, err)
		}
	}
	var raw raft.Log
	if err := store.GetLog(2, &raw); err != nil || len(raw.Extensions) != entryTrailer {
		t.Fatalf("stored entry 2 carries %q, %v: want a trailer", raw.Extensions, err)
	}
	for _, damage := range []func(l *raft.Log){
		func(l *raft.Log) { l.Data[0] ^= 1 },
		func(l *raft.Log) { l.Term++ },
		func(l *raft.Log) { l.Extensions[1] ^= 1 },
	} {
		bad := raw
		bad.Data, bad.Extensions = append([]byte(nil), raw.Data...), append([]byte(nil), raw.Extensions...)
		damage(&bad)
		if err := store.StoreLog(&bad); err != nil {
			t.Fatal(err)
		}
		if err := c.GetLog(2, new(raft.Log)); !errors.Is(err, ErrLogDamaged) {
			t.Fatalf("a damaged entry read back with %v", err)
		}
	}
}

// TestADamagedReadIsToldAsDamage: a damaged entry read while the node
// runs reaches the disk-failure path as ErrLogDamaged, so the node halts
// saying so rather than applying or replicating it.
func TestADamagedReadIsToldAsDamage(t *testing.T) {
	store, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var told []error
	logs := logWrites{LogStore: checkedLog{LogStore: store}, failed: func(_ string, err error) { told = append(told, err) }}
	if err := logs.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("entry")}}); err != nil {
		t.Fatal(err)
	}
	var raw raft.Log
	if err := store.GetLog(1, &raw); err != nil {
		t.Fatal(err)
	}
	raw.Data[0] ^= 1
	if err := store.StoreLog(&raw); err != nil {
		t.Fatal(err)
	}
	if err := logs.GetLog(1, new(raft.Log)); !errors.Is(err, ErrLogDamaged) || len(told) != 1 || !errors.Is(told[0], ErrLogDamaged) {
		t.Fatalf("GetLog = %v; told %v", err, told)
	}
}
