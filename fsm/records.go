package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	iradix "github.com/hashicorp/go-immutable-radix"
)

// Record kinds of the state's serialised form (snapshots, backups).
// Append only.
const (
	RecordMetastore byte = iota + 1
	RecordCatalog
	RecordSchema
	RecordTable
	RecordStaging
)

// WriteRecords streams the whole state as records, one entity each, in a
// fixed order (metastore, catalogs, schemas, tables, staging tables; each
// by key). Equal states produce equal record streams.
func (s *State) WriteRecords(emit func(kind byte, payload []byte) error) error {
	if s.meta != nil {
		if err := emitJSON(emit, RecordMetastore, s.meta); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		kind byte
		tree *iradix.Tree
	}{{RecordCatalog, s.catalogs}, {RecordSchema, s.schemas}, {RecordTable, s.tables}, {RecordStaging, s.staging}} {
		var err error
		t.tree.Root().Walk(func(_ []byte, v any) bool {
			err = emitJSON(emit, t.kind, v)
			return err != nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func emitJSON(emit func(byte, []byte) error, kind byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record kind %d: %w", kind, err)
	}
	return emit(kind, b)
}

// Builder rebuilds a State from records, for restore.
type Builder struct{ t *tx }

// NewBuilder starts an empty state.
func NewBuilder() *Builder { return &Builder{t: NewState().begin()} }

// Add adds one record.
func (b *Builder) Add(kind byte, payload []byte) error {
	d, err := DecodeRecord(kind, payload)
	if err != nil {
		return err
	}
	b.Put(d)
	return nil
}

// Decoded is one state record, decoded and ready for Builder.Put.
type Decoded struct {
	kind byte
	v    any
}

// DecodeRecord decodes one record without touching any builder, so
// records can be decoded in parallel and then put in their order.
func DecodeRecord(kind byte, payload []byte) (Decoded, error) {
	var v any
	switch kind {
	case RecordMetastore:
		v = &Metastore{}
	case RecordCatalog:
		v = &Catalog{}
	case RecordSchema:
		v = &Schema{}
	case RecordTable:
		v = &Table{}
	case RecordStaging:
		v = &StagingTable{}
	default:
		return Decoded{}, fmt.Errorf("unknown state record kind %d", kind)
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return Decoded{}, fmt.Errorf("decode state record kind %d: %w", kind, err)
	}
	if tb, ok := v.(*Table); ok {
		tb.compact()
	}
	return Decoded{kind: kind, v: v}, nil
}

// Put adds a decoded record.
func (b *Builder) Put(d Decoded) {
	switch v := d.v.(type) {
	case *Metastore:
		b.t.meta = v
	case *Catalog:
		b.t.putCatalog(v)
	case *Schema:
		b.t.putSchema(v)
	case *Table:
		if s, ok := b.t.schema(v.CatalogName, v.SchemaName); ok {
			v.CatalogName, v.SchemaName = s.CatalogName, s.Name
		}
		b.t.putTable(v)
	case *StagingTable:
		b.shareStaging(v)
		b.t.putStaging(v)
	}
}

// shareStaging points a staging row's strings at the equal ones its
// schema and table already hold (records come schemas, tables, staging).
func (b *Builder) shareStaging(st *StagingTable) {
	if s, ok := b.t.schema(st.CatalogName, st.SchemaName); ok {
		st.CatalogName, st.SchemaName = s.CatalogName, s.Name
	}
	if tb, ok := b.t.table(st.CatalogName, st.SchemaName, st.Name); ok && tb.ID == st.ID {
		if tb.Location == st.Location {
			st.Location = tb.Location
		}
		st.ID, st.Name = tb.ID, tb.Name
	}
}

// State returns the built state.
func (b *Builder) State() *State { return b.t.commit() }

// Digest is a SHA-256 over the state's record stream: equal on every
// replica that has applied the same log prefix, different as soon as any
// entity differs. Operators and tests use it to prove convergence.
func (s *State) Digest() string {
	h := sha256.New()
	var lenBuf [binary.MaxVarintLen64]byte
	_ = s.WriteRecords(func(kind byte, payload []byte) error {
		h.Write([]byte{kind})
		h.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(payload)))])
		h.Write(payload)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}
