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
	}
	list := ok(t, http.StatusOK, http.MethodGet, nodes[1].URL+"/api/2.1/unity-catalog/tables?catalog_name=unity&schema_name=db", nil)
	var names []string
	for _, tb := range list.Body["tables"].([]any) {
		names = append(names, tb.(map[string]any)["name"].(string))
	}
	if !slices.Contains(names, "orders") {
		t.Fatalf("UC REST list of unity.db: %v", names)
	}
}
