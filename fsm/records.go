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
	var err error
	switch kind {
	case RecordMetastore:
		m := &Metastore{}
		if err = json.Unmarshal(payload, m); err == nil {
			b.t.meta = m
		}
	case RecordCatalog:
		c := &Catalog{}
		if err = json.Unmarshal(payload, c); err == nil {
			b.t.putCatalog(c)
		}
	case RecordSchema:
		s := &Schema{}
		if err = json.Unmarshal(payload, s); err == nil {
			b.t.putSchema(s)
		}
	case RecordTable:
		tb := &Table{}
		if err = json.Unmarshal(payload, tb); err == nil {
			tb.compact()
			if s, ok := b.t.schema(tb.CatalogName, tb.SchemaName); ok {
				tb.CatalogName, tb.SchemaName = s.CatalogName, s.Name
			}
			b.t.putTable(tb)
		}
	case RecordStaging:
		st := &StagingTable{}
		if err = json.Unmarshal(payload, st); err == nil {
			b.shareStaging(st)
			b.t.putStaging(st)
		}
	default:
		return fmt.Errorf("unknown state record kind %d", kind)
	}
	if err != nil {
		return fmt.Errorf("decode state record kind %d: %w", kind, err)
	}
	return nil
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
