package iceberg_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	goiceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/internal/testcluster"
)

var idSchema = goiceberg.NewSchema(0,
	goiceberg.NestedField{ID: 1, Name: "id", Type: goiceberg.PrimitiveTypes.Int64, Required: true})

// clientOn is an iceberg-go REST catalog talking to one node.
func clientOn(t *testing.T, nd *testcluster.Node) *rest.Catalog {
	t.Helper()
	cat, err := rest.NewCatalog(context.Background(), "raftcat", nd.URL+iceberg.Prefix, rest.WithWarehouseLocation("unity"))
	if err != nil {
		t.Fatalf("catalog on %s: %v", nd.URL, err)
	}
	return cat
}

// scanIDs loads the table through cat and reads every id back, sorted.
func scanIDs(t *testing.T, cat *rest.Catalog, ident table.Identifier) ([]int64, *table.Table) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatalf("load %v: %v", ident, err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan %v: %v", ident, err)
	}
	defer at.Release()
	var ids []int64
	for _, chunk := range at.Column(0).Data().Chunks() {
		ids = append(ids, chunk.(*array.Int64).Int64Values()...)
	}
	slices.Sort(ids)
	return ids, tbl
}

// Each append goes through another node, and a third node scans the rows
// back: every node commits and reads the same table.
func TestIcebergGoAppendsThroughDifferentNodes(t *testing.T) {
	nodes := start(t)
	ctx := context.Background()
	ident := table.Identifier{"spread", "events"}
	if err := clientOn(t, nodes[0]).CreateNamespace(ctx, table.Identifier{"spread"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := clientOn(t, nodes[0]).CreateTable(ctx, ident, idSchema); err != nil {
		t.Fatal(err)
	}
	for i, ids := range [][]int64{{1, 2, 3}, {4}} {
		tbl, err := clientOn(t, nodes[i+1]).LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.AppendTable(ctx, rows(t, ids...), 10, nil); err != nil {
			t.Fatalf("append through node %d: %v", i+2, err)
		}
	}
	ids, tbl := scanIDs(t, clientOn(t, nodes[0]), ident)
	if fmt.Sprint(ids) != "[1 2 3 4]" || len(tbl.Metadata().Snapshots()) != 2 {
		t.Fatalf("scan through node 1: ids %v, %d snapshots; want [1 2 3 4] in 2", ids, len(tbl.Metadata().Snapshots()))
	}
}

// Writers on every node append to one table at once; iceberg-go retries
// a lost race on fresh metadata (commit.retry.num-retries), and every
// append is in the table at the end, each as its own snapshot.
func TestIcebergGoConcurrentWritersAllLand(t *testing.T) {
	nodes := start(t)
	ctx := context.Background()
	ident := table.Identifier{"writers", "log"}
	admin := clientOn(t, nodes[0])
	if err := admin.CreateNamespace(ctx, table.Identifier{"writers"}, nil); err != nil {
		t.Fatal(err)
	}
	props := goiceberg.Properties{table.CommitNumRetriesKey: "100", table.CommitMinRetryWaitMsKey: "2",
		table.CommitMaxRetryWaitMsKey: "50"}
	if _, err := admin.CreateTable(ctx, ident, idSchema, catalog.WithProperties(props)); err != nil {
		t.Fatal(err)
	}
	const writers, appends = 4, 3
	want := appendConcurrently(t, nodes, ident, writers, appends)
	ids, tbl := scanIDs(t, clientOn(t, nodes[2]), ident)
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want every append %v", ids, want)
	}
	if n := len(tbl.Metadata().Snapshots()); n != writers*appends {
		t.Fatalf("%d snapshots, want %d", n, writers*appends)
	}
}

// appendConcurrently runs the writers, writer w on node w mod 3 appending
// the ids w*100+a, and returns every id appended, sorted.
func appendConcurrently(t *testing.T, nodes []*testcluster.Node, ident table.Identifier, writers, appends int) []int64 {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers*appends)
	var want []int64
	for w := range writers {
		cat := clientOn(t, nodes[w%len(nodes)])
		for a := range appends {
			want = append(want, int64(w*100+a))
		}
		wg.Go(func() {
			for a := range appends {
				tbl, err := cat.LoadTable(context.Background(), ident)
				if err == nil {
					_, err = tbl.AppendTable(context.Background(), rows(t, int64(w*100+a)), 10, nil)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d, append %d: %w", w, a, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	slices.Sort(want)
	return want
}
