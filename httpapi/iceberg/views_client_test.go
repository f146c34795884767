package iceberg_test

import (
	"context"
	"errors"
	"testing"

	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/raftcat/raftcat/httpapi/iceberg"
	tc "github.com/raftcat/raftcat/internal/testcluster"
)

// iceberg-go's REST catalog drives the view endpoints end to end.
func TestViewsThroughTheIcebergGoClient(t *testing.T) {
	nodes := tc.Start(t, 3, tc.Options{})
	base := tc.Followers(nodes, tc.Leader(t, nodes))[0].URL
	ns, other := newSchema(t, base), newSchema(t, base)
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "raftcat", base+iceberg.Prefix, rest.WithWarehouseLocation("unity"))
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{ns, "daily"}
	sc := iceberggo.NewSchema(0, iceberggo.NestedField{ID: 1, Name: "id", Type: iceberggo.PrimitiveTypes.Int64})
	v1, err := view.NewVersionFromSQL(1, 0, "select id from t", table.Identifier{ns})
	if err != nil {
		t.Fatal(err)
	}
	created, err := cat.CreateView(ctx, ident, v1, sc, catalog.WithViewProperties(iceberggo.Properties{"owner": "ana"}))
	if err != nil {
		t.Fatalf("CreateView: %v", err)
	}
	if _, err := cat.CreateView(ctx, ident, v1, sc); !errors.Is(err, catalog.ErrViewAlreadyExists) {
		t.Fatalf("a second CreateView: %v", err)
	}
	loaded, err := cat.LoadView(ctx, ident)
	if err != nil || loaded.MetadataLocation() != created.MetadataLocation() || loaded.Properties()["owner"] != "ana" ||
		loaded.CurrentVersion().Representations[0].Sql != "select id from t" {
		t.Fatalf("LoadView: %v %v", loaded, err)
	}
	var names []string
	for id, err := range cat.ListViews(ctx, table.Identifier{ns}) {
		if err != nil {
			t.Fatalf("ListViews: %v", err)
		}
		names = append(names, id[len(id)-1])
	}
	if len(names) != 1 || names[0] != "daily" {
		t.Fatalf("ListViews: %v", names)
	}
	if ok, err := cat.CheckViewExists(ctx, ident); !ok || err != nil {
		t.Fatalf("CheckViewExists: %v %v", ok, err)
	}
	v2, _ := view.NewVersionFromSQL(2, 0, "select id + 1 from t", table.Identifier{ns})
	updated, err := cat.UpdateView(ctx, ident,
		[]view.Requirement{view.AssertViewUUID(created.Metadata().ViewUUID())},
		[]view.Update{view.NewAddViewVersionUpdate(v2), view.NewSetCurrentVersionUpdate(2),
			view.NewSetPropertiesUpdate(iceberggo.Properties{"owner": "bo"})})
	if err != nil || updated.CurrentVersion().VersionID != 2 || updated.Properties()["owner"] != "bo" ||
		updated.MetadataLocation() == created.MetadataLocation() {
		t.Fatalf("UpdateView: %v %v", updated, err)
	}
	moved := table.Identifier{other, "daily2"}
	if v, err := cat.RenameView(ctx, ident, moved); err != nil || v.MetadataLocation() != updated.MetadataLocation() {
		t.Fatalf("RenameView: %v %v", v, err)
	}
	if ok, err := cat.CheckViewExists(ctx, ident); ok || err != nil {
		t.Fatalf("the old name still exists: %v %v", ok, err)
	}
	if err := cat.DropView(ctx, moved); err != nil {
		t.Fatalf("DropView: %v", err)
	}
	if _, err := cat.LoadView(ctx, moved); !errors.Is(err, catalog.ErrNoSuchView) {
		t.Fatalf("LoadView after drop: %v", err)
	}
}
