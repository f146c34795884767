package fsm

import (
	"bytes"
	"slices"

	iradix "github.com/hashicorp/go-immutable-radix"
)

// State is an immutable snapshot of the whole catalog. Readers may keep a
// *State as long as they like; appliers derive a new one through a tx.
//
// Entities live in radix trees, one per object kind, each declared by its
// kind's file (newTree). Keys follow the namespace tree (see namespace.go):
// a namespace is keyed by its path, an object in a namespace by the path
// and its name, so everything under a namespace shares its key prefix.
type State struct {
	meta  *Metastore
	trees []*iradix.Tree // by treeID
}

// treeID names one of the state's trees. Ids are handed out while the
// package initialises and are never persisted.
type treeID int

var treeNames []string

// newTree declares a tree of the state.
func newTree(name string) treeID {
	treeNames = append(treeNames, name)
	return treeID(len(treeNames) - 1)
}

// NewState returns an empty, uninitialised state.
func NewState() *State {
	s := &State{trees: make([]*iradix.Tree, len(treeNames))}
	for i := range s.trees {
		s.trees[i] = iradix.New()
	}
	return s
}

// Metastore returns the cluster identity, or nil before initialisation.
func (s *State) Metastore() *Metastore { return s.meta }

// Initialized reports whether the Init command has been applied.
func (s *State) Initialized() bool { return s.meta != nil }

// Counts returns the number of catalogs, schemas, tables and tracked commits.
func (s *State) Counts() (catalogs, schemas, tables, commits int) {
	s.trees[tableTree].Root().Walk(func(_ []byte, v any) bool {
		commits += len(v.(*Table).Commits)
		return false
	})
	return s.trees[catalogTree].Len(), s.trees[schemaTree].Len(), s.trees[tableTree].Len(), commits
}

// walkAfter visits the values directly under prefix (keys prefix+name,
// name without a separator) whose name sorts after `after`, in key order,
// stopping after limit values (limit <= 0: all). Keys of deeper levels
// are skipped a whole subtree at a time.
func walkAfter(t *iradix.Tree, prefix []byte, after string, limit int, visit func(any)) {
	walkAfterWhere(t, prefix, after, limit, func(any) bool { return true }, visit)
}

// walkAfterWhere is walkAfter visiting only the values keep accepts; limit
// counts those.
func walkAfterWhere(t *iradix.Tree, prefix []byte, after string, limit int, keep func(any) bool, visit func(any)) {
	start := append(append([]byte{}, prefix...), after...)
	if after != "" {
		start = append(start, 0) // first key strictly greater than prefix+after
	}
	n := 0
	for {
		it := t.Root().Iterator()
		it.SeekLowerBound(start)
		next, done := walkLevel(it, prefix, func(_ []byte, v any) bool {
			if !keep(v) {
				return false
			}
			visit(v)
			n++
			return limit > 0 && n >= limit
		})
		if done {
			return
		}
		start = next
	}
}

// walkLevel visits values of one level until visit says stop, the prefix
// ends (done) or a deeper key is met: then it returns the first key past
// that key's subtree, to seek to.
func walkLevel(it *iradix.Iterator, prefix []byte, visit func(k []byte, v any) bool) (next []byte, done bool) {
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		if !bytes.HasPrefix(k, prefix) {
			return nil, true
		}
		if i := bytes.IndexByte(k[len(prefix):], sepByte); i >= 0 {
			return append(slices.Clone(k[:len(prefix)+i]), sepByte+1), false
		}
		if visit(k, v) {
			return nil, true
		}
	}
	return nil, true
}

// tx is a write transaction over a State. Appliers mutate through it and
// either commit (new State) or drop it (nothing happened). A tree's
// transaction is opened when the applier first touches it.
type tx struct {
	base *State
	meta *Metastore
	txns []*iradix.Txn // by treeID; nil: untouched
}

func (s *State) begin() *tx {
	return &tx{base: s, meta: s.meta, txns: make([]*iradix.Txn, len(s.trees))}
}

// tree returns the transaction of one tree.
func (t *tx) tree(id treeID) *iradix.Txn {
	if t.txns[id] == nil {
		t.txns[id] = t.base.trees[id].Txn()
	}
	return t.txns[id]
}

func (t *tx) commit() *State {
	s := &State{meta: t.meta, trees: slices.Clone(t.base.trees)}
	for i, txn := range t.txns {
		if txn != nil {
			s.trees[i] = txn.CommitOnly()
		}
	}
	return s
}

// getter is what radix trees and their transactions share for lookups.
type getter interface {
	Get(k []byte) (any, bool)
}

// get looks a key up and returns its value with its concrete type.
func get[T any](g getter, key []byte) (T, bool) {
	v, ok := g.Get(key)
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// keysWithPrefix returns the keys under prefix in order.
func keysWithPrefix(txn *iradix.Txn, prefix []byte) [][]byte {
	var keys [][]byte
	txn.Root().WalkPrefix(prefix, func(k []byte, _ any) bool {
		keys = append(keys, append([]byte{}, k...))
		return false
	})
	return keys
}

// hasPrefix reports whether any key starts with prefix.
func hasPrefix(txn *iradix.Txn, prefix []byte) bool {
	found := false
	txn.Root().WalkPrefix(prefix, func([]byte, any) bool {
		found = true
		return true
	})
	return found
}
