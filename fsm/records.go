package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Record kinds of the state's serialised form (snapshots, backups) are
// append only. Each is declared and registered (registerRecord) in the
// file of its object kind.

// Record layouts: how the payloads of the record kinds are shaped. A
// snapshot stream says which layout its records have; readers decode every
// layout from OldestRecordLayout on.
const (
	// RecordLayout is the layout WriteRecords writes: a table's Delta
	// state under "delta".
	RecordLayout uint16 = 2
	// OldestRecordLayout is that of release 2fa8555 and before: a table's
	// Delta state ("commits", "uniform") at the top level of its record.
	OldestRecordLayout uint16 = 1
)

// WriteRecords streams the whole state as records of RecordLayout, one
// entity each, in a fixed order: by record kind, then by key within a
// kind. Equal states produce equal record streams.
func (s *State) WriteRecords(emit func(kind byte, payload []byte) error) error {
	for kind, spec := range recordSpecs {
		if spec == nil {
			continue
		}
		err := spec.write(s, func(v any) error { return emitJSON(emit, byte(kind), v) })
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

// Add adds one record of RecordLayout.
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
	spec *recordSpec
	v    any
}

// DecodeRecord decodes one record of RecordLayout without touching any
// builder, so records can be decoded in parallel and then put in their
// order.
func DecodeRecord(kind byte, payload []byte) (Decoded, error) {
	return DecodeRecordLayout(RecordLayout, kind, payload)
}

// DecodeRecordLayout is DecodeRecord for a record of the given layout.
func DecodeRecordLayout(layout uint16, kind byte, payload []byte) (Decoded, error) {
	if layout < OldestRecordLayout || layout > RecordLayout {
		return Decoded{}, fmt.Errorf("unknown state record layout %d", layout)
	}
	spec := recordSpecs[kind]
	if spec == nil {
		return Decoded{}, fmt.Errorf("unknown state record kind %d", kind)
	}
	v, err := spec.decode(layout, payload)
	if err != nil {
		return Decoded{}, fmt.Errorf("decode state record kind %d: %w", kind, err)
	}
	return Decoded{spec: spec, v: v}, nil
}

// Put adds a decoded record.
func (b *Builder) Put(d Decoded) {
	if d.spec != nil {
		d.spec.put(b, d.v)
	}
}

// State returns the built state.
func (b *Builder) State() *State { return b.t.commit() }

// Digest is a SHA-256 over the state's record stream: equal on every
// replica that has applied the same log prefix, different as soon as any
// entity differs. Operators and tests use it to prove convergence. It
// covers the records as RecordLayout shapes them, so it is comparable
// between replicas that write the same layout.
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
