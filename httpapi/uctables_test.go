package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

func ucTableBody(sch, name, format, location string) map[string]any {
	return map[string]any{
		"name": name, "catalog_name": "unity", "schema_name": sch, "table_type": "EXTERNAL",
		"data_source_format": format, "storage_location": location,
		"columns": []any{
			map[string]any{"name": "id", "type_json": `{"name":"id","type":"long","nullable":false,"metadata":{}}`,
				"position": 0, "nullable": false, "partition_index": 0},
			map[string]any{"name": "tags", "type_json": `{"name":"tags","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{"comment":"labels"}}`,
				"position": 1, "nullable": true},
		},
		"properties": map[string]any{"k": "v"},
	}
}

func TestFastUCRESTRegistersExternalTables(t *testing.T) {
	a := startAPI(t)
	_, sch := a.newSchema()

	t.Run("parquet table shows in UC REST and is refused by the Delta API (case 31)", func(t *testing.T) {
		a := a.with(t)
		r := a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, "pq", "parquet", "/data/pq/"))
		info := r.obj(t)
		if info["data_source_format"] != "PARQUET" || info["table_type"] != "EXTERNAL" || info["storage_location"] != "file:///data/pq" {
			t.Fatalf("table info = %s", r.raw)
		}
		cols := arr(t, info["columns"])
		if len(cols) != 2 || dig(cols[1], "type_text") != "array<string>" || dig(cols[1], "comment") != "labels" ||
			dig(cols[0], "partition_index") == nil {
			t.Fatalf("columns = %s", r.raw)
		}
		if got := dig(info, "properties", "k"); got != "v" {
			t.Fatalf("properties stored as given, got %v", info["properties"])
		}
		// UC Delta case 31: load is 400 UnsupportedTableFormatException, HEAD still 204.
		deltaErr(t, a.do(http.MethodGet, tablePath("unity", sch, "pq"), nil), 400, "UnsupportedTableFormatException", "Table is not a Delta table")
		if h := a.do(http.MethodHead, tablePath("unity", sch, "pq"), nil); h.status != http.StatusNoContent || len(h.raw) != 0 {
			t.Fatalf("HEAD on a parquet table: %d %q", h.status, h.raw)
		}
		// UC Delta case 43: updates on it are refused the same way.
		upd := map[string]any{"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": info["table_id"]}},
			"updates": []any{map[string]any{"action": "set-properties", "updates": map[string]any{"a": "b"}}}}
		deltaErr(t, a.do(http.MethodPost, tablePath("unity", sch, "pq"), upd), 400, "UnsupportedTableFormatException", "Table is not a Delta table")
	})

	t.Run("invalid registrations are 400 and create nothing", func(t *testing.T) {
		a := a.with(t)
		cases := []struct {
			mod  func(map[string]any)
			want string
		}{
			{func(b map[string]any) { b["table_type"] = "MANAGED" }, "Delta API"},
			{func(b map[string]any) { b["data_source_format"] = "XLS" }, "data_source_format"},
			{func(b map[string]any) { b["storage_location"] = "" }, "storage_location is required"},
			{func(b map[string]any) { b["storage_location"] = "s3://bucket" }, "non-empty path prefix"},
			{func(b map[string]any) { b["storage_location"] = "s3://bucket/__unitystorage/x" }, "__unitystorage"},
			{func(b map[string]any) { b["name"] = "a.b" }, "Name cannot contain"},
			{func(b map[string]any) { b["columns"].([]any)[0].(map[string]any)["type_json"] = "" }, "type_json is required"},
		}
		for _, c := range cases {
			b := ucTableBody(sch, uniq("bad"), "DELTA", "/data/x")
			c.mod(b)
			ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", b), 400, "INVALID_ARGUMENT", c.want)
			if r := a.do(http.MethodGet, apiPrefix+"/tables/unity."+sch+"."+b["name"].(string), nil); r.status == http.StatusOK {
				t.Fatalf("rejected registration was created: %s", r.raw)
			}
		}
		// A location containing managed storage is refused.
		stg := a.stage("unity", sch, uniq("probe"))
		loc := str(t, stg["location"])
		root := loc[:strings.Index(loc, "/__unitystorage/")]
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, uniq("over"), "DELTA", root)), 400, "INVALID_ARGUMENT", "must not contain the managed storage")
		// A taken name is UC REST's TABLE_ALREADY_EXISTS.
		name := uniq("dup")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, name, "CSV", "/data/dup"))
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, name, "CSV", "/data/dup2")), 400, "TABLE_ALREADY_EXISTS", "already exists")
	})
}
