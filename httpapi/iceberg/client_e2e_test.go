package iceberg_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	goiceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/raftcat/raftcat/httpapi/iceberg"
)

// iceberg-go writes data through the catalog on a follower: two appends,
// a scan of every row, and a stale append refused as a failed commit.
func TestIcebergGoAppendAndScan(t *testing.T) {
	nodes := start(t)
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "raftcat", nodes[1].URL+iceberg.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"e2e"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := goiceberg.NewSchema(0, goiceberg.NestedField{ID: 1, Name: "id", Type: goiceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"e2e", "t"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	first, err := tbl.AppendTable(ctx, rows(t, 1, 2, 3), 10, nil)
	if err != nil {
		t.Fatalf("first append: %v", err)
	}
	if _, err := first.AppendTable(ctx, rows(t, 4), 10, nil); err != nil {
		t.Fatalf("second append: %v", err)
	}
	loaded, err := cat.LoadTable(ctx, table.Identifier{"e2e", "t"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.NumRows() != 4 || len(loaded.Metadata().Snapshots()) != 2 || loaded.Metadata().LastSequenceNumber() != 2 {
		t.Fatalf("after two appends: %d rows, %d snapshots", got.NumRows(), len(loaded.Metadata().Snapshots()))
	}
	if _, err := first.AppendTable(ctx, rows(t, 5), 10, nil); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("a stale append answered %v, want a failed commit", err)
	}
	if !strings.HasPrefix(loaded.MetadataLocation(), loaded.Location()+"/metadata/00002-") {
		t.Fatalf("metadata location %s", loaded.MetadataLocation())
	}
}

func rows(t *testing.T, ids ...int64) arrow.Table {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(ids, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(schema, []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.Record{rec})
	t.Cleanup(tbl.Release)
	return tbl
}
