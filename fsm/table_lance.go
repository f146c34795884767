package fsm

import (
	"encoding/binary"
	"strings"

	iradix "github.com/hashicorp/go-immutable-radix"
)

// FormatLance is the format of Lance tables.
const FormatLance = "LANCE"

// LanceState is what a Lance table holds beyond the common table fields.
// raftcat is the table's manifest store (Lance Namespace "managed
// versioning"): each version of the table is a manifest file in the
// table's _versions/ directory, and the catalog records which versions
// exist and where their manifests are. The records themselves live in a
// tree of their own (lanceVersionTree), keyed by table uuid and version,
// so a table with many versions is not copied whole on every commit.
type LanceState struct {
	// OnlyDeclared is set while a declared table has never had a version
	// recorded (Lance's is_only_declared).
	OnlyDeclared bool `json:"only_declared,omitempty"`
	// Count is the number of versions recorded; Latest the highest of them
	// (meaningless when Count is 0).
	Count  int64 `json:"count,omitempty"`
	Latest int64 `json:"latest,omitempty"`
}

// LanceVersion is one recorded version of a Lance table.
type LanceVersion struct {
	TableID         string            `json:"table_id"`
	Version         int64             `json:"version"`
	ManifestPath    string            `json:"manifest_path"` // full location of the final manifest
	ManifestSize    int64             `json:"manifest_size"`
	ETag            string            `json:"e_tag,omitempty"` // the object store's ETag of the final manifest
	TimestampMillis int64             `json:"timestamp_millis"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	// Source is the staging manifest the version was made from; a create
	// naming the same version and source again is a replay.
	Source string `json:"source,omitempty"`
}

// RecordLanceVersion is the record kind of a Lance table version.
const RecordLanceVersion byte = 10

var lanceVersionTree = newCountedTree("lance versions", "lance_version") // table uuid\x00version (8 bytes BE) -> *LanceVersion

func init() {
	registerRecord(RecordLanceVersion, treeRecord(lanceVersionTree, nil, func(b *Builder, v *LanceVersion) {
		b.t.tree(lanceVersionTree).Insert(lanceVersionKey(v.TableID, v.Version), v)
	}))
}

func lanceVersionPrefix(tableID string) []byte { return []byte(tableID + sep) }

func lanceVersionKey(tableID string, version int64) []byte {
	return binary.BigEndian.AppendUint64(lanceVersionPrefix(tableID), uint64(version))
}

// LanceVersion returns one version of a Lance table.
func (s *State) LanceVersion(tb *Table, version int64) (*LanceVersion, bool) {
	if version < 0 {
		return nil, false
	}
	return get[*LanceVersion](s.trees[lanceVersionTree], lanceVersionKey(tb.ID, version))
}

// LanceVersions lists a Lance table's versions in ascending order (or
// descending), starting after version `after` (any negative value: from
// the first), at most limit of them (limit <= 0: all).
func (s *State) LanceVersions(tb *Table, after int64, descending bool, limit int) []*LanceVersion {
	prefix := lanceVersionPrefix(tb.ID)
	var out []*LanceVersion
	keep := func(v any) bool {
		lv := v.(*LanceVersion)
		if after >= 0 && ((!descending && lv.Version <= after) || (descending && lv.Version >= after)) {
			return false
		}
		out = append(out, lv)
		return limit > 0 && len(out) >= limit
	}
	if descending {
		walkReverse(s.trees[lanceVersionTree].Root(), prefix, keep)
	} else {
		s.trees[lanceVersionTree].Root().WalkPrefix(prefix, func(_ []byte, v any) bool { return keep(v) })
	}
	return out
}

// walkReverse visits the values under prefix in descending key order
// until visit says stop.
func walkReverse(root *iradix.Node, prefix []byte, visit func(any) bool) {
	it := root.ReverseIterator()
	it.SeekReverseLowerBound(append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	for k, v, ok := it.Previous(); ok; k, v, ok = it.Previous() {
		if !strings.HasPrefix(string(k), string(prefix)) || visit(v) {
			return
		}
	}
}

// resolveLance is resolveTableIn for a table that must be Lance's.
func (t *tx) resolveLance(namespace []string, name string) (*Table, *Error) {
	tb, err := t.resolveTableIn(namespace, name)
	if err != nil {
		return nil, err
	}
	if tb.Format != FormatLance || tb.Lance == nil {
		return nil, Errf(CodeUnsupportedFormat, "Table is not a Lance table: %s", tb.FullName())
	}
	return tb, nil
}

func (t *tx) lanceVersion(tableID string, version int64) (*LanceVersion, bool) {
	return get[*LanceVersion](t.tree(lanceVersionTree), lanceVersionKey(tableID, version))
}

// forgetLanceVersions removes every version record of a removed table.
func (t *tx) forgetLanceVersions(tb *Table) {
	if tb.Lance != nil && tb.Lance.Count > 0 {
		t.tree(lanceVersionTree).DeletePrefix(lanceVersionPrefix(tb.ID))
	}
}

// latestLanceVersion is the highest version still recorded for a table,
// after deletions.
func (t *tx) latestLanceVersion(tableID string) (int64, bool) {
	var latest int64
	found := false
	walkReverse(t.tree(lanceVersionTree).Root(), lanceVersionPrefix(tableID), func(v any) bool {
		latest, found = v.(*LanceVersion).Version, true
		return true
	})
	return latest, found
}

// TablesWhere lists the tables keep accepts across the whole catalog in
// key order (by namespace path, then name), starting after the table
// whose namespace path and name are `after` (nil: from the first), at
// most limit of them (limit <= 0: all).
func (s *State) TablesWhere(after []string, limit int, keep func(*Table) bool) []*Table {
	it := s.trees[tableTree].Root().Iterator()
	if len(after) > 0 {
		it.SeekLowerBound(append(pathKey(after), 0))
	}
	var out []*Table
	for _, v, ok := it.Next(); ok && (limit <= 0 || len(out) < limit); _, v, ok = it.Next() {
		if tb := v.(*Table); keep(tb) {
			out = append(out, tb)
		}
	}
	return out
}
