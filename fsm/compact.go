package fsm

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"weak"
)

// Tables are most of a large catalog's memory, and most of what each one
// holds is the same as its neighbours hold: the property keys and values
// the managed contract requires, the format and type, often the schema.
// Those are stored once and shared. Sharing is invisible: stored values
// are never mutated, and equal strings and bytes behave the same whatever
// memory backs them, so states, snapshots and digests are unchanged.

// knownFeatures are the Delta table features whose property keys are
// shared; any other feature still works, with a key of its own.
var knownFeatures = []string{
	"appendOnly", "catalogManaged", "changeDataFeed", "checkConstraints", "clustering", "collations",
	"columnMapping", "deletionVectors", "domainMetadata", "generatedColumns", "icebergCompatV1",
	"icebergCompatV2", "identityColumns", "inCommitTimestamp", "invariants", "rowTracking",
	"timestampNtz", "typeWidening", "typeWidening-preview", "v2Checkpoint", "vacuumProtocolCheck",
	"variantType", "variantType-preview",
}

// featureKeys maps a known feature to its delta.feature.<name> key.
var featureKeys = func() map[string]string {
	m := make(map[string]string, len(knownFeatures))
	for _, f := range knownFeatures {
		m[f] = PropFeaturePrefix + f
	}
	return m
}()

// featureKey is the property key declaring feature f.
func featureKey(f string) string {
	if k, ok := featureKeys[f]; ok {
		return k
	}
	return PropFeaturePrefix + f
}

// vocabulary holds the property keys and values the catalog writes or
// requires, each once.
var vocabulary = func() map[string]string {
	m := map[string]string{}
	add := func(s string) { m[s] = s }
	for _, s := range []string{PropTableID, PropMinReader, PropMinWriter, PropClustering, PropRowIDHighWater,
		PropLastUpdate, PropLastCommitTs, PropUniformFormats, featureSupported, "true", "false", "iceberg",
		"delta.enableRowTracking", "delta.columnMapping.mode", "delta.columnMapping.maxColumnId",
		"delta.rowTracking.materializedRowIdColumnName", "delta.rowTracking.materializedRowCommitVersionColumnName",
		"delta.randomizeFilePrefixes", "delta.parquet.compression.codec", "delta.enableChangeDataFeed",
		"delta.appendOnly", "delta.enableIcebergCompatV2", "name", "id", "none", "zstd", "snappy"} {
		add(s)
	}
	for _, kv := range ManagedProperties {
		add(kv[0])
		add(kv[1])
	}
	for _, k := range featureKeys {
		add(k)
	}
	for i := 0; i <= 10; i++ {
		add(strconv.Itoa(i))
	}
	return m
}()

// canon returns the shared copy of s if it is in the vocabulary, else s.
func canon(s string) string {
	if v, ok := vocabulary[s]; ok {
		return v
	}
	return s
}

// canonEnum returns the constant equal to s, if any, so that a decoded
// format or table type does not keep its own copy.
func canonEnum(s string) string {
	switch s {
	case FormatDelta:
		return FormatDelta
	case FormatIceberg:
		return FormatIceberg
	case TableManaged:
		return TableManaged
	case TableExternal:
		return TableExternal
	case TableView:
		return TableView
	}
	return s
}

// compactProperties copies props with shared keys and values; the table
// id property shares the table's id.
func compactProperties(props map[string]string, id string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		if k == PropTableID && v == id {
			out[PropTableID] = id
			continue
		}
		out[canon(k)] = canon(v)
	}
	return out
}

// columnSet is a schema (format encoding and top-level names) that
// tables with identical schemas share.
type columnSet struct {
	raw   json.RawMessage
	names []string
}

var (
	columnSeed = maphash.MakeSeed()
	// columnSets finds a live columnSet by content hash. Entries are weak:
	// a schema no table holds any more is collected and its entry removed.
	columnSets sync.Map // uint64 -> weak.Pointer[columnSet]
)

func hashColumns(raw json.RawMessage, names []string) uint64 {
	var h maphash.Hash
	h.SetSeed(columnSeed)
	h.Write(raw)
	for _, n := range names {
		h.WriteByte(0)
		h.WriteString(n)
	}
	return h.Sum64()
}

// shareColumns returns the shared columnSet equal to (raw, names),
// creating it if no table holds one. A hash collision only costs sharing.
func shareColumns(raw json.RawMessage, names []string) *columnSet {
	if len(raw) == 0 && len(names) == 0 {
		return nil
	}
	key := hashColumns(raw, names)
	if v, ok := columnSets.Load(key); ok {
		if cs := v.(weak.Pointer[columnSet]).Value(); cs != nil && bytes.Equal(cs.raw, raw) && slices.Equal(cs.names, names) {
			return cs
		}
	}
	cs := &columnSet{raw: bytes.Clone(raw), names: make([]string, len(names))}
	for i, n := range names {
		cs.names[i] = canon(n)
	}
	wp := weak.Make(cs)
	columnSets.Store(key, wp)
	runtime.AddCleanup(cs, func(key uint64) { columnSets.CompareAndDelete(key, wp) }, key)
	return cs
}

// setColumns stores a schema on t, shared with every table holding an
// identical one. A nil or empty encoding stays as it was given, so the
// serialised table does not change.
func (t *Table) setColumns(raw json.RawMessage, names []string) {
	cs := shareColumns(raw, names)
	if cs == nil {
		t.cols, t.Columns, t.ColumnNames = nil, raw, slices.Clone(names)
		return
	}
	t.cols, t.Columns, t.ColumnNames = cs, cs.raw, cs.names
	if raw == nil {
		t.Columns = nil
	}
	if names == nil {
		t.ColumnNames = nil
	}
}

// compact makes a table decoded from a snapshot record share what tables
// share when created by commands.
func (t *Table) compact() {
	t.Format, t.Type = canonEnum(t.Format), canonEnum(t.Type)
	t.Properties = compactProperties(t.Properties, t.ID)
	t.setColumns(t.Columns, t.ColumnNames)
}
