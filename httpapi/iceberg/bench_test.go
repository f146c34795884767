package iceberg

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/raftcat/raftcat/storage"
)

// BenchmarkLoadTable compares a load's metadata read served from the
// cache with a miss (file read and parse), for metadata of a table with
// many snapshots.
func BenchmarkLoadTable(b *testing.B) {
	objs := storage.NewBlobs(storage.BlobOptions{})
	defer objs.Close()
	loc := "file://" + b.TempDir() + "/t"
	s := &Server{cfg: Config{Objects: objs}, cache: newMetadataCache(64 << 20)}
	f, err := s.writeMetadata(context.Background(), metadataLocation(loc, 0), benchMetadata(b, loc, 200), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("metadata file: %d bytes", len(f.raw))
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.readMetadata(context.Background(), f.location); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for b.Loop() {
			s.cache.drop(f.location)
			if _, err := s.readMetadata(context.Background(), f.location); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchMetadata is a table's metadata after n appends.
func benchMetadata(b *testing.B, loc string, n int) table.Metadata {
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	meta, err := table.NewMetadataWithUUID(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, loc, nil, uuid.New())
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		parent := int64(i - 1)
		snap := table.Snapshot{SnapshotID: int64(i), SequenceNumber: int64(i), TimestampMs: meta.LastUpdatedMillis() + int64(i),
			ManifestList: fmt.Sprintf("%s/metadata/snap-%d.avro", loc, i), Summary: &table.Summary{Operation: table.OpAppend}}
		if i > 1 {
			snap.ParentSnapshotID = &parent
		}
		ups := []table.Update{table.NewAddSnapshotUpdate(&snap), table.NewSetSnapshotRefUpdate("main", int64(i), table.BranchRef, -1, -1, -1)}
		if meta, err = table.UpdateTableMetadata(meta, ups, ""); err != nil {
			b.Fatal(err)
		}
	}
	return meta
}
