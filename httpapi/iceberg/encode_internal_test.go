package iceberg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// metadataWith is table metadata holding n snapshots, and properties
// with characters JSON encoders escape.
func metadataWith(t testing.TB, n int) table.Metadata {
	t.Helper()
	var snaps, log []string
	for i := 1; i <= n; i++ {
		parent := ""
		if i > 1 {
			parent = fmt.Sprintf(`"parent-snapshot-id":%d,`, i-1)
		}
		snaps = append(snaps, fmt.Sprintf(`{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,`+
			`"manifest-list":"file:///w/t/metadata/snap-%d.avro","summary":{"operation":"append","added-data-files":"1"},"schema-id":0}`,
			i, parent, i, 1700000000000+i, i))
		log = append(log, fmt.Sprintf(`{"snapshot-id":%d,"timestamp-ms":%d}`, i, 1700000000000+i))
	}
	raw := `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"file:///w/t",` +
		`"last-sequence-number":` + fmt.Sprint(n) + `,"last-updated-ms":1700000009999,"last-column-id":1,` +
		`"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}],` +
		`"current-schema-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"default-spec-id":0,"last-partition-id":999,` +
		`"properties":{"note":"a <b> & c"},"current-snapshot-id":` + fmt.Sprint(n) + `,` +
		`"snapshots":[` + strings.Join(snaps, ",") + `],"snapshot-log":[` + strings.Join(log, ",") + `],` +
		`"metadata-log":[],"sort-orders":[{"order-id":0,"fields":[]}],"default-sort-order-id":0,` +
		`"refs":{"main":{"snapshot-id":` + fmt.Sprint(n) + `,"type":"branch"}}}`
	meta, err := table.ParseMetadataBytes([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// appended is meta with one more snapshot, made the main branch, as a
// commit's update builds it.
func appended(t testing.TB, meta table.Metadata, id int64, summary map[string]string) table.Metadata {
	t.Helper()
	b, err := table.MetadataBuilderFromBase(meta, "file:///w/t/metadata/x.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	parent := meta.CurrentSnapshot().SnapshotID
	snap := &table.Snapshot{SnapshotID: id, ParentSnapshotID: &parent, SequenceNumber: meta.LastSequenceNumber() + 1,
		TimestampMs: 1700000100000 + id, ManifestList: fmt.Sprintf("file:///w/t/metadata/snap-%d.avro", id),
		Summary: &table.Summary{Operation: table.OpAppend, Properties: summary}}
	if err := b.AddSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef(table.MainBranch, id, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// encodesAsIcebergGo checks f's bytes against iceberg-go's own encoding
// (through encoding/json, as every other writer of metadata makes it).
func encodesAsIcebergGo(t *testing.T, f *metadataFile, err error) {
	t.Helper()
	want, werr := json.Marshal(f.meta)
	if err != nil || werr != nil || !bytes.Equal(f.raw, want) {
		t.Fatalf("encoding differs (%v, %v):\n%s\nwant\n%s", err, werr, f.raw, want)
	}
}

// The metadata written for a commit is byte for byte what iceberg-go
// makes of it, read back from a file or built by a commit, and each
// snapshot's place in it is known where the split applies.
func TestEncodeMetadataIsWhatEncodingJSONWrites(t *testing.T) {
	empty, err := table.NewMetadata(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}),
		iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///w/t", iceberg.Properties{"a": "<b>"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := encodeMetadata(empty, nil)
	encodesAsIcebergGo(t, f, err)
	for _, n := range []int{1, 50} {
		read := metadataWith(t, n)
		f, err := encodeMetadata(read, nil)
		encodesAsIcebergGo(t, f, err)
		built := appended(t, read, 1000, map[string]string{"added-data-files": "1", "note": "<&>"})
		f, err = encodeMetadata(built, nil)
		encodesAsIcebergGo(t, f, err)
		if len(f.spans) != n+1 {
			t.Fatalf("%d snapshots, %d spans", n+1, len(f.spans))
		}
		for i, sp := range f.spans {
			var s table.Snapshot
			if err := json.Unmarshal(f.raw[sp.from:sp.to], &s); err != nil || s.SnapshotID != f.snaps[i].SnapshotID {
				t.Fatalf("span %d holds %q (%v)", i, f.raw[sp.from:sp.to], err)
			}
		}
	}
}

// A chain of commits, each encoded from the file before it, writes what
// iceberg-go writes, and so do commits that remove snapshots or change
// one the base holds: only snapshots the base holds alike are copied.
func TestEncodeMetadataFromItsBase(t *testing.T) {
	meta := appended(t, metadataWith(t, 20), 100, nil)
	base, err := encodeMetadata(meta, nil)
	encodesAsIcebergGo(t, base, err)
	for id := int64(101); id < 110; id++ {
		next, err := encodeMetadata(appended(t, base.meta, id, map[string]string{"n": fmt.Sprint(id)}), base)
		encodesAsIcebergGo(t, next, err)
		base = next
	}

	b, err := table.MetadataBuilderFromBase(base.meta, "file:///w/t/metadata/y.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveSnapshots([]int64{1, 2, 3}, false); err != nil {
		t.Fatal(err)
	}
	pruned, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	f, err := encodeMetadata(pruned, base)
	encodesAsIcebergGo(t, f, err)

	// A base whose snapshot of the same id encodes otherwise is not copied.
	changed := *base
	changed.snaps = slices.Clone(base.snaps)
	changed.snaps[5].Summary = &table.Summary{Operation: table.OpDelete}
	changed.raw = slices.Clone(base.raw)
	sp := base.spans[5]
	copy(changed.raw[sp.from:sp.to], bytes.Replace(base.raw[sp.from:sp.to], []byte(`"append"`), []byte(`"delete"`), 1))
	f, err = encodeMetadata(appended(t, base.meta, 200, nil), &changed)
	encodesAsIcebergGo(t, f, err)
}

func BenchmarkEncodeMetadata(b *testing.B) {
	read := metadataWith(b, 500)
	meta := appended(b, read, 1000, map[string]string{"added-data-files": "1"})
	base, err := encodeMetadata(meta, nil)
	if err != nil {
		b.Fatal(err)
	}
	next := appended(b, meta, 1001, map[string]string{"added-data-files": "1"})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(next); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("its own MarshalJSON", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeWhole(next); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from its base", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeMetadata(next, base); err != nil {
				b.Fatal(err)
			}
		}
	})
}
