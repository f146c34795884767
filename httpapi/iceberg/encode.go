package iceberg

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"github.com/apache/iceberg-go/table"
)

// span is where one snapshot's JSON lies in a metadata file's bytes.
type span struct{ from, to int }

// snapshotsKey is the key iceberg-go writes the snapshot list under: the
// last one of a v2 document, after every other field.
var snapshotsKey = []byte(`,"snapshots":[`)

// encodeMetadata is meta as JSON, byte for byte what iceberg-go's own
// encoding makes of it, with where each snapshot lies in it when known.
//
// Most commits append one snapshot to a table that keeps all the earlier
// ones, and encoding those again is most of a commit's encoding: each
// carries a summary map that iceberg-go sorts and encodes twice. So a v2
// document is written as the rest of the metadata, encoded by iceberg-go
// without its snapshots, followed by the snapshots, where those the base
// file already holds unchanged are copied from its bytes and only the
// others encoded.
//
// The result is a metadataFile without its location.
func encodeMetadata(meta table.Metadata, base *metadataFile) (*metadataFile, error) {
	f := &metadataFile{meta: meta}
	snaps, head, ok := splitSnapshots(meta)
	if !ok {
		var err error
		f.raw, err = encodeWhole(meta)
		return f, err
	}
	out := append(head[:len(head)-1:len(head)-1], snapshotsKey...)
	f.snaps, f.spans = snaps, make([]span, 0, len(snaps))
	for i := range snaps {
		from := len(out)
		var err error
		if out, err = appendSnapshot(out, snaps, i, base); err != nil {
			return nil, err
		}
		f.spans = append(f.spans, span{from, len(out)})
		out = append(out, ',')
	}
	f.raw = append(out[:len(out)-1], ']', '}')
	return f, nil
}

// encodeWhole is iceberg-go's encoding of meta. Calling its MarshalJSON
// directly spares encoding/json a second pass over the whole document
// (it compacts and checks whatever a Marshaler returns); the bytes are
// the same, as the Marshaler's output is already compact and escaped.
func encodeWhole(meta table.Metadata) ([]byte, error) {
	if m, ok := meta.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	return json.Marshal(meta)
}

// appendSnapshot appends the JSON of snaps[i]: the base file's bytes for
// it when the base holds the same snapshot at the same place.
func appendSnapshot(out []byte, snaps []table.Snapshot, i int, base *metadataFile) ([]byte, error) {
	if base != nil && i < len(base.spans) && i < len(base.snaps) && sameSnapshot(&base.snaps[i], &snaps[i]) {
		sp := base.spans[i]
		return append(out, base.raw[sp.from:sp.to]...), nil
	}
	raw, err := snaps[i].MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(out, raw...), nil
}

// splitSnapshots returns a v2 metadata's snapshots and the encoding of
// the rest of it. ok is false where that split is not known to give
// iceberg-go's bytes: other format versions, no snapshots, snapshots
// iceberg-go still holds undecoded, or a layout it does not expect.
func splitSnapshots(meta table.Metadata) (snaps []table.Snapshot, head []byte, ok bool) {
	if meta.Version() != 2 {
		return nil, nil, false
	}
	v := reflect.ValueOf(meta)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	list, lazy := v.FieldByName("SnapshotList"), v.FieldByName("deferredSnapshots")
	if v.Kind() != reflect.Struct || !list.IsValid() || !lazy.IsValid() || lazy.Kind() != reflect.Pointer || !lazy.IsNil() {
		return nil, nil, false
	}
	snaps, _ = list.Interface().([]table.Snapshot)
	if len(snaps) == 0 {
		return nil, nil, false
	}
	head, ok = encodeWithout(v)
	return snaps, head, ok
}

// encodeWithout encodes a copy of the metadata struct v with no snapshots.
func encodeWithout(v reflect.Value) ([]byte, bool) {
	cp := reflect.New(v.Type()).Elem()
	cp.Set(v)
	list := cp.FieldByName("SnapshotList")
	if !list.CanSet() {
		return nil, false
	}
	list.Set(reflect.Zero(list.Type()))
	m, isMarshaler := cp.Interface().(json.Marshaler)
	if !isMarshaler {
		return nil, false
	}
	head, err := m.MarshalJSON()
	if err != nil || len(head) < 2 || head[len(head)-1] != '}' || bytes.Contains(head, snapshotsKey[1:]) {
		return nil, false
	}
	return head, true
}

// sameSnapshot says whether two snapshots encode alike.
func sameSnapshot(a, b *table.Snapshot) bool {
	return a.SnapshotID == b.SnapshotID && a.SequenceNumber == b.SequenceNumber &&
		a.TimestampMs == b.TimestampMs && a.ManifestList == b.ManifestList &&
		samePtr(a.ParentSnapshotID, b.ParentSnapshotID) && samePtr(a.SchemaID, b.SchemaID) &&
		samePtr(a.FirstRowID, b.FirstRowID) && samePtr(a.AddedRows, b.AddedRows) &&
		(a.ManifestLocations == nil) == (b.ManifestLocations == nil) &&
		slices.Equal(a.ManifestLocations, b.ManifestLocations) && sameSummary(a.Summary, b.Summary)
}

func samePtr[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

func sameSummary(a, b *table.Summary) bool {
	return a == b || (a != nil && b != nil && a.Operation == b.Operation &&
		(a.Properties == nil) == (b.Properties == nil) && maps.Equal(a.Properties, b.Properties))
}
