package raftlog

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// BenchmarkStoreLogs writes batches of eight 500-byte entries, durably,
// to segment files and to raft-boltdb (the other log store a node can
// have): go test -run x -bench StoreLogs ./internal/raftlog/
func BenchmarkStoreLogs(b *testing.B) {
	b.Run("segments", func(b *testing.B) {
		s, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchStore(b, s)
	})
	b.Run("boltdb", func(b *testing.B) {
		s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "raft.db"),
			BoltOptions: &bbolt.Options{NoFreelistSync: true}})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchStore(b, s)
	})
}

func benchStore(b *testing.B, s raft.LogStore) {
	data := make([]byte, 500)
	next := uint64(1)
	batch := make([]*raft.Log, 8)
	b.SetBytes(int64(len(batch) * len(data)))
	for b.Loop() {
		for i := range batch {
			batch[i] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}
			next++
		}
		if err := s.StoreLogs(batch); err != nil {
			b.Fatal(err)
		}
	}
}
