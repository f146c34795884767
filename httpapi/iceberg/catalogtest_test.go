package iceberg_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/raftcat/raftcat/httpapi/iceberg"
)

// iceberg-go's own conformance suite passes against a three-node cluster,
// each test's catalog talking to the next node in turn.
func TestIcebergGoConformance(t *testing.T) {
	nodes := start(t)
	var next atomic.Int64
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		SupportsNamespaceProperties: true,
		NewCatalog: func(t *testing.T) catalog.Catalog {
			nd := nodes[int(next.Add(1))%len(nodes)]
			cat, err := rest.NewCatalog(context.Background(), "raftcat", nd.URL+iceberg.Prefix)
			if err != nil {
				t.Fatalf("rest.NewCatalog against %s: %v", nd.URL, err)
			}
			return cat
		},
	})
}
