package iceberg_test

import (
	"net/http"
	"slices"
	"testing"
)

// An Iceberg table is a table of its schema in Unity Catalog REST too, on
// every node: format ICEBERG, its uuid and location, listed with the
// schema's other tables.
func TestIcebergTablesShowInUCREST(t *testing.T) {
	nodes := setup(t)
	created := create(t, nodes[0], "orders")
	md := meta(created)
	for _, nd := range nodes {
		uc := ok(t, http.StatusOK, http.MethodGet, nd.URL+"/api/2.1/unity-catalog/tables/unity.db.orders", nil)
		if uc.Body["data_source_format"] != "ICEBERG" || uc.Body["table_type"] != "MANAGED" {
			t.Fatalf("%s: UC REST shows %v", nd.URL, uc.Body)
		}
		if uc.Body["table_id"] != md["table-uuid"] || uc.Body["storage_location"] != md["location"] {
			t.Fatalf("%s: UC REST id/location %v %v, Iceberg %v %v", nd.URL, uc.Body["table_id"],
				uc.Body["storage_location"], md["table-uuid"], md["location"])
		}
		checkIcebergColumns(t, nd.URL, uc.Body["columns"])
	}
	list := ok(t, http.StatusOK, http.MethodGet, nodes[1].URL+"/api/2.1/unity-catalog/tables?catalog_name=unity&schema_name=db", nil)
	var names []string
	for _, tb := range list.Body["tables"].([]any) {
		names = append(names, tb.(map[string]any)["name"].(string))
		if tb.(map[string]any)["name"] == "orders" {
			checkIcebergColumns(t, "list", tb.(map[string]any)["columns"])
		}
	}
	if !slices.Contains(names, "orders") {
		t.Fatalf("UC REST list of unity.db: %v", names)
	}
}

// checkIcebergColumns checks UC REST's columns of createBody's schema:
// (id long required, name string optional), as UC REST shows a Delta
// table's.
func checkIcebergColumns(t *testing.T, where string, got any) {
	t.Helper()
	want := []map[string]any{
		{"name": "id", "type_text": "bigint", "type_name": "LONG", "nullable": false,
			"type_json": `{"name":"id","type":"long","nullable":false,"metadata":{}}`},
		{"name": "name", "type_text": "string", "type_name": "STRING", "nullable": true,
			"type_json": `{"name":"name","type":"string","nullable":true,"metadata":{}}`},
	}
	cols, _ := got.([]any)
	if len(cols) != len(want) {
		t.Fatalf("%s: UC REST columns %v, want %d", where, got, len(want))
	}
	for i, w := range want {
		c := cols[i].(map[string]any)
		for k, v := range w {
			if c[k] != v {
				t.Fatalf("%s: column %d %s = %v, want %v (%v)", where, i, k, c[k], v, c)
			}
		}
		if c["position"] != float64(i) {
			t.Fatalf("%s: column %d position = %v", where, i, c["position"])
		}
	}
}
