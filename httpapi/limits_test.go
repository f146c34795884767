package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// Every string field UC REST and the Delta API store has a size limit
// (docs/configuration.md#request-limits); a longer value is a 400 in the
// protocol's envelope naming the field, and nothing is stored.

const (
	commentLimit   = 64 << 10
	propValueLimit = 16 << 10
	propKeyLimit   = 1 << 10
	twoMiB         = 2 << 20
)

func TestFastStringFieldsHaveSizeLimits(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	huge := strings.Repeat("c", twoMiB)

	t.Run("UC REST catalogs and schemas", func(t *testing.T) {
		a := a.with(t)
		cases := []struct {
			name, path string
			body       func(name string) map[string]any
			want       string
		}{
			{"catalog comment", "/catalogs", func(n string) map[string]any { return map[string]any{"name": n, "comment": huge} }, "comment"},
			{"catalog property value", "/catalogs", func(n string) map[string]any {
				return map[string]any{"name": n, "properties": map[string]any{"k": huge}}
			}, "properties['k']"},
			{"catalog property key", "/catalogs", func(n string) map[string]any {
				return map[string]any{"name": n, "properties": map[string]any{strings.Repeat("k", propKeyLimit+1): "v"}}
			}, "properties key"},
			{"catalog storage_root", "/catalogs", func(n string) map[string]any {
				return map[string]any{"name": n, "storage_root": "s3://bucket/" + strings.Repeat("r", 8<<10)}
			}, "storage_root"},
			{"schema comment", "/schemas", func(n string) map[string]any {
				return map[string]any{"name": n, "catalog_name": "unity", "comment": huge}
			}, "comment"},
			{"schema property value", "/schemas", func(n string) map[string]any {
				return map[string]any{"name": n, "catalog_name": "unity", "properties": map[string]any{"k": strings.Repeat("v", propValueLimit+1)}}
			}, "properties['k']"},
		}
		for _, c := range cases {
			name := uniq("lim")
			before := a.appliedIndex()
			ucErr(t, a.do(http.MethodPost, apiPrefix+c.path, c.body(name)), 400, "INVALID_ARGUMENT", c.want, "at most")
			a.refused(before)
		}
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs/"+uniq("lim"), nil), 404, "NOT_FOUND")

		cat := uniq("cat")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": cat, "comment": "short"})
		sch := uniq("s")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": sch, "catalog_name": cat})
		before := a.appliedIndex()
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/catalogs/"+cat, map[string]any{"comment": huge}), 400, "INVALID_ARGUMENT", "comment")
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/schemas/"+cat+"."+sch, map[string]any{"properties": map[string]any{"k": huge}}),
			400, "INVALID_ARGUMENT", "properties['k']")
		a.refused(before)
		if got := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/"+cat, nil).obj(t); got["comment"] != "short" {
			t.Fatalf("comment after a refused update: %.40v", got["comment"])
		}

		// Values at the limits are stored and read back.
		atLimit := strings.Repeat("é", commentLimit/2)
		a.ok(http.StatusOK, http.MethodPatch, apiPrefix+"/catalogs/"+cat, map[string]any{"comment": atLimit,
			"properties": map[string]any{strings.Repeat("k", propKeyLimit): strings.Repeat("v", propValueLimit)}})
		if got := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/"+cat, nil).obj(t); got["comment"] != atLimit {
			t.Fatal("a comment at the limit did not read back")
		}
	})

	t.Run("UC REST tables", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		cases := []struct {
			name string
			mut  func(b map[string]any)
			want string
		}{
			{"comment", func(b map[string]any) { b["comment"] = huge }, "comment"},
			{"property value", func(b map[string]any) { b["properties"] = map[string]any{"big": huge} }, "properties['big']"},
			{"storage_location", func(b map[string]any) { b["storage_location"] = "s3://bucket/" + strings.Repeat("l", 8<<10) }, "storage_location"},
			{"column comment", func(b map[string]any) {
				b["columns"] = []any{ucCol("id", `{"name":"id","type":"long","nullable":false,"metadata":{"comment":"`+huge+`"}}`, 0)}
			}, "columns[0].type_json.metadata.comment"},
			{"column name", func(b map[string]any) {
				n := strings.Repeat("n", 2<<10)
				b["columns"] = []any{ucCol(n, `{"name":"`+n+`","type":"long","nullable":false,"metadata":{}}`, 0)}
			}, "columns[0].type_json.name"},
			{"nested column comment", func(b map[string]any) {
				b["columns"] = []any{ucCol("s", `{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{"comment":"`+
					huge+`"}}]},"nullable":true,"metadata":{}}`, 0)}
			}, "columns[0].type_json.type.fields[0].metadata.comment"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				a := a.with(t)
				name := uniq("t")
				b := ucTableBody(sch, name, "DELTA", "/data/"+name)
				c.mut(b)
				before := a.appliedIndex()
				ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", b), 400, "INVALID_ARGUMENT", c.want, "at most")
				a.refused(before)
				ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/unity."+sch+"."+name, nil), 404, "NOT_FOUND")
			})
		}
	})

	t.Run("Delta API create", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		cases := []struct {
			name string
			mut  func(b map[string]any)
			want string
		}{
			{"comment", func(b map[string]any) { b["comment"] = huge }, "comment"},
			{"property value", func(b map[string]any) { b["properties"] = map[string]any{"big": huge} }, "properties['big']"},
			{"property key", func(b map[string]any) { b["properties"] = map[string]any{strings.Repeat("k", 4<<10): "v"} }, "properties key"},
			{"location", func(b map[string]any) { b["location"] = "s3://bucket/" + strings.Repeat("l", 8<<10) }, "location"},
			{"column comment", func(b map[string]any) {
				b["columns"] = map[string]any{"type": "struct", "fields": []any{
					map[string]any{"name": "id", "type": "long", "nullable": true, "metadata": map[string]any{"comment": huge}}}}
			}, "columns.fields[0].metadata.comment"},
			{"clustering column", func(b map[string]any) {
				b["domain-metadata"] = map[string]any{"delta.clustering": map[string]any{"clusteringColumns": [][]string{{strings.Repeat("c", 4<<10)}}}}
			}, "clusteringColumns"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				a := a.with(t)
				name := uniq("ext")
				b := externalBody(name, "file:///data/"+name)
				c.mut(b)
				before := a.appliedIndex()
				deltaErr(t, a.do(http.MethodPost, tablesPath("unity", sch), b), 400, "InvalidParameterValueException", c.want, "at most")
				a.refused(before)
				deltaErr(t, a.do(http.MethodGet, tablePath("unity", sch, name), nil), 404, "NoSuchTableException")
			})
		}
	})

	t.Run("Delta API updates", func(t *testing.T) {
		a := a.with(t)
		m := a.newManaged()
		etag := m.etag()
		before := a.appliedIndex()
		deltaErr(t, m.update("", setProps("big", huge)), 400, "InvalidParameterValueException", "set-properties updates['big']", "at most")
		deltaErr(t, m.update("", map[string]any{"action": "set-table-comment", "comment": huge}), 400, "InvalidParameterValueException", "comment", "at most")
		deltaErr(t, m.update("", commit(1), setProps("big", huge)), 400, "InvalidParameterValueException", "set-properties updates['big']")
		a.refused(before)
		if load := m.load(); str(t, dig(load, "metadata", "etag")) != etag || latest(t, load) != 0 {
			t.Fatalf("a refused update changed the table: %v", dig(load, "metadata"))
		}
		m.mustUpdate("", setProps("ok", strings.Repeat("v", propValueLimit)))
	})
}
