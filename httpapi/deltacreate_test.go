package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// externalBody is a createTable request for an EXTERNAL table.
func externalBody(name, location string) map[string]any {
	return map[string]any{
		"name": name, "location": location, "table-type": "EXTERNAL", "columns": simpleColumns(),
		"protocol":                 map[string]any{"min-reader-version": 1, "min-writer-version": 2},
		"properties":               map[string]any{"owner.team": "x"},
		"last-commit-timestamp-ms": int64(1700000000123),
	}
}

// columnNames lists the top-level column names of a load answer.
func columnNames(t testing.TB, load map[string]any) []string {
	t.Helper()
	var out []string
	for _, f := range arr(t, dig(load, "metadata", "columns", "fields")) {
		out = append(out, str(t, dig(f, "name")))
	}
	return out
}

func TestFastDeltaCreateTable(t *testing.T) {
	t.Parallel()
	a := startAPI(t)

	t.Run("managed happy path", func(t *testing.T) { // UC Delta case 14
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "happy")
		body := managedBody(t, stg, "happy")
		body["comment"] = "a table"
		r := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body)
		res := r.obj(t)
		if got := keys(res); !slices.Equal(got, []string{"commits", "latest-table-version", "metadata"}) {
			t.Fatalf("create answer keys = %v", got)
		}
		md := objOf(t, res["metadata"])
		if md["table-uuid"] != stg["table-id"] || md["location"] != stg["location"] || md["table-type"] != "MANAGED" {
			t.Fatalf("metadata identity = %v, staging %v", md, stg)
		}
		if _, ok := md["comment"]; ok {
			t.Fatalf("metadata carries a comment field: %v", md)
		}
		if got := columnNames(t, res); !slices.Equal(got, []string{"id", "amount"}) {
			t.Fatalf("columns = %v", got)
		}
		if dig(md, "columns", "type") != "struct" || dig(md, "columns", "fields", 1, "metadata", "comment") != "money" {
			t.Fatalf("columns = %v", md["columns"])
		}
		if n := len(arr(t, res["commits"])); n != 0 {
			t.Fatalf("commits = %v, want []", res["commits"])
		}
		if latest(t, res) != 0 || num(t, md["last-commit-version"]) != 0 || num(t, md["last-commit-timestamp-ms"]) != 1700000000000 {
			t.Fatalf("versions: latest %v last-commit-version %v ts %v", res["latest-table-version"], md["last-commit-version"], md["last-commit-timestamp-ms"])
		}
		if num(t, md["created-time"]) <= 0 || md["created-time"].(json.Number) != md["updated-time"].(json.Number) {
			t.Fatalf("created-time %v updated-time %v", md["created-time"], md["updated-time"])
		}
		if str(t, md["etag"]) == "" {
			t.Fatal("empty etag")
		}
		if got := md["partition-columns"]; got == nil || len(arr(t, got)) != 0 {
			t.Fatalf("partition-columns = %v, want []", got)
		}
		props := objOf(t, md["properties"])
		for _, f := range append(strs(t, dig(body, "protocol", "reader-features")), strs(t, dig(body, "protocol", "writer-features"))...) {
			if props["delta.feature."+f] != "supported" {
				t.Fatalf("delta.feature.%s = %v", f, props["delta.feature."+f])
			}
		}
		for k, v := range map[string]string{
			"delta.minReaderVersion": "3", "delta.minWriterVersion": "7", "delta.lastUpdateVersion": "0",
			"delta.lastCommitTimestamp": "1700000000000", "delta.rowTracking.rowIdHighWaterMark": "99",
			"io.unitycatalog.tableId": str(t, stg["table-id"]), "delta.checkpointPolicy": "v2",
		} {
			if props[k] != v {
				t.Fatalf("properties[%q] = %v, want %q", k, props[k], v)
			}
		}

		// The same state through load, HEAD and UC REST.
		load := a.ok(http.StatusOK, http.MethodGet, tablePath(cat, sch, "happy"), nil)
		requireIndex(t, load)
		if dig(load.body, "metadata", "etag") != md["etag"] || dig(load.body, "metadata", "table-uuid") != md["table-uuid"] {
			t.Fatalf("load differs from create: %s", load.raw)
		}
		head := a.do(http.MethodHead, tablePath(cat, sch, "happy"), nil)
		if head.status != http.StatusNoContent || len(head.raw) != 0 {
			t.Fatalf("HEAD existing = %d %q", head.status, head.raw)
		}

		info := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/"+cat+"."+sch+".happy", nil).obj(t)
		for k, v := range map[string]any{"name": "happy", "catalog_name": cat, "schema_name": sch, "table_type": "MANAGED",
			"data_source_format": "DELTA", "storage_location": stg["location"], "table_id": stg["table-id"], "comment": "a table"} {
			if info[k] != v {
				t.Fatalf("UC table %s = %v, want %v", k, info[k], v)
			}
		}
		if dig(info, "properties", "delta.feature.catalogManaged") != "supported" {
			t.Fatalf("UC table properties = %v", info["properties"])
		}
		cols := arr(t, info["columns"])
		if len(cols) != 2 {
			t.Fatalf("UC columns = %v", cols)
		}
		c0, c1 := objOf(t, cols[0]), objOf(t, cols[1])
		if c0["name"] != "id" || c0["type_text"] != "bigint" || c0["type_name"] != "LONG" || c0["nullable"] != false || num(t, c0["position"]) != 0 {
			t.Fatalf("UC column 0 = %v", c0)
		}
		if c0["type_json"] != `{"name":"id","type":"long","nullable":false,"metadata":{}}` {
			t.Fatalf("UC column 0 type_json = %v", c0["type_json"])
		}
		if c1["name"] != "amount" || c1["type_name"] != "DOUBLE" || c1["comment"] != "money" || num(t, c1["position"]) != 1 || c1["nullable"] != true {
			t.Fatalf("UC column 1 = %v", c1)
		}
		var tj map[string]any
		if err := json.Unmarshal([]byte(str(t, c1["type_json"])), &tj); err != nil || tj["name"] != "amount" || tj["type"] != "double" {
			t.Fatalf("UC column 1 type_json = %v (%v)", c1["type_json"], err)
		}

		list := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables?catalog_name="+cat+"&schema_name="+sch, nil).obj(t)
		tables := arr(t, list["tables"])
		if len(tables) != 1 || dig(tables, 0, "name") != "happy" || dig(tables, 0, "table_type") != "MANAGED" || dig(tables, 0, "data_source_format") != "DELTA" {
			t.Fatalf("UC table list = %v", tables)
		}
	})

	t.Run("derived properties win", func(t *testing.T) { // UC Delta case 15
		a := a.with(t)
		cat, sch := a.newSchema()
		body := managedBody(t, a.stage(cat, sch, "derived"), "derived")
		props := body["properties"].(map[string]any)
		props["delta.feature.catalogManaged"] = "client-override"
		props["clusteringColumns"] = `[["wrong"]]`
		proto := body["protocol"].(map[string]any)
		proto["writer-features"] = append(proto["writer-features"].([]string), "clustering")
		body["domain-metadata"] = map[string]any{"delta.clustering": map[string]any{"clusteringColumns": [][]string{{"id"}}}}
		res := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body).obj(t)
		if got := dig(res, "metadata", "properties", "delta.feature.catalogManaged"); got != "supported" {
			t.Fatalf("delta.feature.catalogManaged = %v", got)
		}
		if got := dig(res, "metadata", "properties", "clusteringColumns"); got != `[["id"]]` {
			t.Fatalf("clusteringColumns = %v", got)
		}
	})

	t.Run("missing fields", func(t *testing.T) { // UC Delta case 16
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "missing")
		for _, tc := range []struct{ drop, msg string }{
			{"name", "Table name is required."},
			{"location", "Table location is required."},
			{"columns", "columns is required."},
			{"table-type", "table-type is required."},
			{"protocol", "protocol is required."},
			{"last-commit-timestamp-ms", "last-commit-timestamp-ms is required."},
		} {
			body := managedBody(t, stg, "missing")
			delete(body, tc.drop)
			deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), body), 400, "InvalidParameterValueException", tc.msg)
		}
		body := managedBody(t, stg, "missing")
		body["name"] = "  "
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), body), 400, "InvalidParameterValueException", "Table name is required.")
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), nil), 400, "InvalidParameterValueException", "Request body is required.")
		body = managedBody(t, stg, "missing")
		body["table-type"] = "VIEW"
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), body), 400, "InvalidParameterValueException", "table-type")
		// Nothing was created along the way.
		if r := a.do(http.MethodHead, tablePath(cat, sch, "missing"), nil); r.status != http.StatusNotFound {
			t.Fatalf("HEAD after failed creates = %d", r.status)
		}
		a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), managedBody(t, stg, "missing"))
	})

	t.Run("managed contract", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "contract")
		without := func(list []string, drop string) []string {
			return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == drop })
		}
		cases := []struct {
			name string
			mut  func(b map[string]any)
			want []string
		}{
			// UC Delta case 17
			{"no catalogManaged", func(b map[string]any) {
				p := b["protocol"].(map[string]any)
				p["reader-features"] = without(p["reader-features"].([]string), "catalogManaged")
				p["writer-features"] = without(p["writer-features"].([]string), "catalogManaged")
			}, []string{"catalogManaged"}},
			// UC Delta case 18
			{"reader 2", func(b map[string]any) { b["protocol"].(map[string]any)["min-reader-version"] = 2 },
				[]string{"minReaderVersion must be at least 3"}},
			{"writer 6", func(b map[string]any) { b["protocol"].(map[string]any)["min-writer-version"] = 6 },
				[]string{"minWriterVersion must be at least 7"}},
			// UC Delta case 19
			{"reader not writer", func(b map[string]any) {
				p := b["protocol"].(map[string]any)
				p["reader-features"] = append(p["reader-features"].([]string), "columnMapping")
			}, []string{"reader-features but not writer-features", "columnMapping"}},
			// UC Delta case 20
			{"checkpoint policy", func(b map[string]any) { b["properties"].(map[string]any)["delta.checkpointPolicy"] = "v1" },
				[]string{"delta.checkpointPolicy", "'v2'", "'v1'"}},
			{"required property null", func(b map[string]any) { b["properties"].(map[string]any)["delta.enableDeletionVectors"] = nil },
				[]string{"delta.enableDeletionVectors", "'null'"}},
			// UC Delta case 21
			{"table id missing", func(b map[string]any) { delete(b["properties"].(map[string]any), "io.unitycatalog.tableId") },
				[]string{"io.unitycatalog.tableId"}},
			{"table id wrong", func(b map[string]any) { b["properties"].(map[string]any)["io.unitycatalog.tableId"] = uuid.NewString() },
				[]string{"io.unitycatalog.tableId", str(t, stg["table-id"])}},
			// UC Delta case 22
			{"row tracking without feature", func(b map[string]any) {
				p := b["protocol"].(map[string]any)
				p["writer-features"] = without(p["writer-features"].([]string), "rowTracking")
			}, []string{"'rowTracking' writer feature"}},
			{"clustering without feature", func(b map[string]any) {
				b["domain-metadata"] = map[string]any{"delta.clustering": map[string]any{"clusteringColumns": [][]string{{"id"}}}}
			}, []string{"'clustering' writer feature"}},
		}
		for _, tc := range cases {
			body := managedBody(t, stg, "contract")
			tc.mut(body)
			r := a.do(http.MethodPost, tablesPath(cat, sch), body)
			if r.status != 400 {
				t.Fatalf("%s: status %d: %s", tc.name, r.status, r.raw)
			}
			deltaErr(t, r, 400, "InvalidParameterValueException", tc.want...)
		}
		// None of that consumed the staging table.
		a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), managedBody(t, stg, "contract"))
	})

	t.Run("partition columns", func(t *testing.T) { // UC Delta case 23
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "parts")
		body := managedBody(t, stg, "parts")
		body["partition-columns"] = []string{"nope"}
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), body), 400, "InvalidParameterValueException", "partition-columns references unknown column: nope")
		body["partition-columns"] = []string{"id", "ID"}
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), body), 400, "InvalidParameterValueException", "duplicate entry (case-insensitive)")
		body["partition-columns"] = []string{"ID"}
		res := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body).obj(t)
		if got := strs(t, dig(res, "metadata", "partition-columns")); !slices.Equal(got, []string{"id"}) {
			t.Fatalf("partition-columns = %v, want [id]", got)
		}
		info := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/"+cat+"."+sch+".parts", nil).obj(t)
		if idx := dig(info, "columns", 0, "partition_index"); idx == nil || num(t, idx) != 0 {
			t.Fatalf("UC partition_index of id = %v", idx)
		}
		if idx := dig(info, "columns", 1, "partition_index"); idx != nil {
			t.Fatalf("UC partition_index of amount = %v, want absent", idx)
		}
	})

	t.Run("staging lookup", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "once")
		body := managedBody(t, stg, "once")
		body["location"] = str(t, stg["location"]) + "_elsewhere"
		// UC Delta case 24
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), body), 404, "NoSuchTableException", "Staging table not found")

		// Trailing slashes are normalised away before the lookup.
		body = managedBody(t, stg, "once")
		body["location"] = str(t, stg["location"]) + "/"
		a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body)

		// UC Delta case 25
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), managedBody(t, stg, "once")), 409, "AlreadyExistsException", "Table already exists")
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), managedBody(t, stg, "other")), 400, "InvalidParameterValueException", "Staging table already committed")
		if r := a.do(http.MethodHead, tablePath(cat, sch, "other"), nil); r.status != http.StatusNotFound {
			t.Fatalf("HEAD other = %d", r.status)
		}
	})

	t.Run("location forms", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "single_slash")
		body := managedBody(t, stg, "single_slash")
		body["location"] = strings.Replace(str(t, stg["location"]), "file:///", "file:/", 1)
		res := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body).obj(t)
		if dig(res, "metadata", "location") != stg["location"] {
			t.Fatalf("location %v, want %v", dig(res, "metadata", "location"), stg["location"])
		}
		stg = a.stage(cat, sch, "bare_path")
		body = managedBody(t, stg, "bare_path")
		body["location"] = strings.TrimPrefix(str(t, stg["location"]), "file://")
		a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body)
	})

	t.Run("uniform at create", func(t *testing.T) { // UC Delta case 28
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "uni")
		loc := str(t, stg["location"])
		const formats = "delta.universalFormat.enabledFormats"
		iceberg := func(ml string, v int64) map[string]any {
			return map[string]any{"iceberg": map[string]any{"metadata-location": ml, "converted-delta-version": v, "converted-delta-timestamp": 1700000000007}}
		}
		cases := []struct {
			mut  func(b map[string]any)
			want string
		}{
			{func(b map[string]any) { b["properties"].(map[string]any)[formats] = "iceberg" }, formats},
			{func(b map[string]any) { b["uniform"] = iceberg(loc+"/metadata/v1.json", 0) }, formats},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				b["uniform"] = map[string]any{}
			}, "uniform.iceberg"},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				u := iceberg(loc+"/metadata/v1.json", 0)
				delete(u["iceberg"].(map[string]any), "metadata-location")
				b["uniform"] = u
			}, "metadata-location"},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				u := iceberg(loc+"/metadata/v1.json", 0)
				delete(u["iceberg"].(map[string]any), "converted-delta-version")
				b["uniform"] = u
			}, "converted-delta-version is required"},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				u := iceberg(loc+"/metadata/v1.json", 0)
				delete(u["iceberg"].(map[string]any), "converted-delta-timestamp")
				b["uniform"] = u
			}, "converted-delta-timestamp is required"},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				b["uniform"] = iceberg("s3://elsewhere/metadata/v1.json", 0)
			}, "must be a subpath"},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				b["uniform"] = iceberg(loc+"/metadata/v1.json", 5)
			}, "must be 0 or 1"},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				u := iceberg(loc+"/metadata/v1.json", 0)
				u["iceberg"].(map[string]any)["base-converted-delta-version"] = 0
				b["uniform"] = u
			}, "base-converted-delta-version must not be set at create time"},
			{func(b map[string]any) {
				b["properties"].(map[string]any)[formats] = "iceberg"
				b["uniform"] = iceberg(loc+"/"+strings.Repeat("m", 70000), 0)
			}, "exceeds the maximum allowed"},
		}
		for i, tc := range cases {
			body := managedBody(t, stg, "uni")
			tc.mut(body)
			r := a.do(http.MethodPost, tablesPath(cat, sch), body)
			if r.status != 400 {
				t.Fatalf("case %d: status %d: %.300s", i, r.status, r.raw)
			}
			deltaErr(t, r, 400, "InvalidParameterValueException", tc.want)
		}
		for i, v := range []int64{0, 1} {
			name := "uni" + strconv.Itoa(i)
			stg := a.stage(cat, sch, name)
			loc := str(t, stg["location"])
			body := managedBody(t, stg, name)
			body["properties"].(map[string]any)[formats] = "iceberg"
			body["uniform"] = iceberg(loc+"/metadata/v1.json", v)
			res := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body).obj(t)
			if dig(res, "uniform", "iceberg", "metadata-location") != loc+"/metadata/v1.json" ||
				num(t, dig(res, "uniform", "iceberg", "converted-delta-version")) != v ||
				num(t, dig(res, "uniform", "iceberg", "converted-delta-timestamp")) != 1700000000007 {
				t.Fatalf("uniform echoed as %v", res["uniform"])
			}
		}
	})

	t.Run("containers renamed with their tables", func(t *testing.T) {
		a := a.with(t)
		cat := uniq("mv")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": cat})
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "s", "catalog_name": cat})
		created := a.createManaged(cat, "s", "t")
		m := &managedTable{a: a, cat: cat, sch: "s", tbl: "t", uuid: str(t, dig(created, "metadata", "table-uuid"))}
		m.mustUpdate("", commit(1))

		a.ok(http.StatusOK, http.MethodPatch, apiPrefix+"/schemas/"+cat+".s", map[string]any{"new_name": "s2"})
		deltaErr(t, a.do(http.MethodGet, tablePath(cat, "s", "t"), nil), 404, "NoSuchSchemaException")
		m.sch = "s2"
		if load := m.load(); dig(load, "metadata", "table-uuid") != m.uuid || !slices.Equal(commitVersions(t, load), []int64{1}) {
			t.Fatalf("table after schema rename = %v", load)
		}

		cat2 := uniq("mv")
		a.ok(http.StatusOK, http.MethodPatch, apiPrefix+"/catalogs/"+cat, map[string]any{"new_name": cat2})
		deltaErr(t, a.do(http.MethodGet, tablePath(cat, "s2", "t"), nil), 404, "NoSuchCatalogException")
		m.cat = cat2
		m.mustUpdate("", commit(2))
		if load := m.load(); !slices.Equal(commitVersions(t, load), []int64{2, 1}) {
			t.Fatalf("commits after catalog rename = %v", commitVersions(t, load))
		}
		info := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/"+cat2+".s2.t", nil).obj(t)
		if info["catalog_name"] != cat2 || info["schema_name"] != "s2" || info["table_id"] != m.uuid {
			t.Fatalf("UC table after renames = %v", info)
		}
	})

	t.Run("namespace errors", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "ns")
		deltaErr(t, a.do(http.MethodPost, tablesPath("nope_cat", sch), managedBody(t, stg, "ns")), 404, "NoSuchCatalogException", "nope_cat")
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, "nope_sch"), managedBody(t, stg, "ns")), 404, "NoSuchSchemaException", "nope_sch")
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), managedBody(t, stg, "a.b")), 400, "InvalidParameterValueException", "period")
	})

	t.Run("column shapes", func(t *testing.T) { // UC Delta case 27
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "cols")
		field := func(name string, typ any) map[string]any {
			return map[string]any{"name": name, "type": typ, "nullable": true, "metadata": map[string]any{}}
		}
		cases := []struct {
			cols any
			want string
		}{
			{map[string]any{"type": "struct", "fields": []any{map[string]any{"type": "long", "nullable": true, "metadata": map[string]any{}}}},
				"columns.fields[0].name is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", "long"), map[string]any{"name": "b", "nullable": true, "metadata": map[string]any{}}}},
				"columns.fields[1].type is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", "void")}}, "columns.fields[0].type: Unsupported Delta primitive type: void"},
			{map[string]any{"type": "struct", "fields": []any{field(" ", "long")}}, "columns.fields[0].name is required."},
			{map[string]any{"type": "struct", "fields": []any{map[string]any{"name": "a", "type": "long", "metadata": map[string]any{}}}},
				"columns.fields[0].nullable is required."},
			{map[string]any{"type": "struct", "fields": []any{map[string]any{"name": "a", "type": "long", "nullable": true}}},
				"columns.fields[0].metadata is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "array", "element-type": "long"})}},
				"columns.fields[0].type.contains-null is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "map", "key-type": "string", "value-type": "long"})}},
				"columns.fields[0].type.value-contains-null is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "map", "value-type": "long", "value-contains-null": true})}},
				"columns.fields[0].type.key-type is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "map", "key-type": "string", "value-contains-null": true})}},
				"columns.fields[0].type.value-type is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", "decimal(50,2)")}}, "columns.fields[0].type.precision must be in [0, 38], got 50."},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "decimal", "precision": -1, "scale": 0})}},
				"columns.fields[0].type.precision must be in [0, 38], got -1."},
			{map[string]any{"type": "struct", "fields": []any{field("a", "decimal(5,10)")}}, "columns.fields[0].type.scale must be in [0, precision=5], got 10."},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "decimal", "scale": 0})}},
				"columns.fields[0].type.precision is required."},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "array", "contains-null": true,
				"element-type": map[string]any{"type": "struct", "fields": []any{map[string]any{"type": "long", "nullable": true, "metadata": map[string]any{}}}}})}},
				"columns.fields[0].type.element-type.fields[0].name is required."},
			{map[string]any{"type": "struct", "fields": []any{}}, "columns.fields must contain at least one field."},
			{map[string]any{"type": "struct", "fields": []any{field("id", "long"), field("ID", "long")}},
				"Duplicate field name (case-insensitive) in columns.fields[1]: ID"},
			{map[string]any{"type": "struct", "fields": []any{field("a", map[string]any{"type": "array", "contains-null": true,
				"element-type": map[string]any{"type": "struct", "fields": []any{field("X", "long"), field("x", "string")}}})}},
				"Duplicate field name (case-insensitive) in columns.fields[0].type.element-type.fields[1]: x"},
			{map[string]any{"type": "struct", "fields": []any{"long"}}, "Cannot construct instance of"},
		}
		for _, tc := range cases {
			body := managedBody(t, stg, "cols")
			body["columns"] = tc.cols
			deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), body), 400, "InvalidParameterValueException", tc.want)
		}
		body := managedBody(t, stg, "cols")
		body["columns"] = map[string]any{"type": "struct", "fields": []any{
			field("d", map[string]any{"type": "decimal", "precision": 10, "scale": 2}),
			field("m", map[string]any{"type": "map", "key-type": "string", "value-type": "integer", "value-contains-null": false}),
		}}
		res := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), body).obj(t)
		if got := dig(res, "metadata", "columns", "fields", 0, "type"); got != "decimal(10,2)" {
			t.Fatalf("decimal object re-serialised as %v, want decimal(10,2)", got)
		}
		if got := dig(res, "metadata", "columns", "fields", 1, "type", "value-contains-null"); got != false {
			t.Fatalf("map value-contains-null = %v", got)
		}
		info := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/"+cat+"."+sch+".cols", nil).obj(t)
		d := objOf(t, dig(info, "columns", 0))
		if d["type_name"] != "DECIMAL" || num(t, d["type_precision"]) != 10 || num(t, d["type_scale"]) != 2 || d["type_text"] != "decimal(10,2)" {
			t.Fatalf("UC decimal column = %v", d)
		}
		if got := dig(info, "columns", 1, "type_json"); !strings.Contains(str(t, got), `"valueContainsNull":false`) {
			t.Fatalf("UC map type_json is not camelCase: %v", got)
		}
	})

	t.Run("external table", func(t *testing.T) { // UC Delta case 29
		a := a.with(t)
		cat, sch := a.newSchema()
		loc := "s3://bucket/ext/" + uniq("tbl")
		res := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), externalBody("ext", loc)).obj(t)
		if got := keys(res); !slices.Equal(got, []string{"metadata"}) {
			t.Fatalf("EXTERNAL answer keys = %v (no commits / latest-table-version expected)", got)
		}
		md := objOf(t, res["metadata"])
		if md["table-type"] != "EXTERNAL" || md["location"] != loc {
			t.Fatalf("EXTERNAL metadata = %v", md)
		}
		if _, err := uuid.Parse(str(t, md["table-uuid"])); err != nil {
			t.Fatalf("table-uuid %v: %v", md["table-uuid"], err)
		}
		if dig(md, "properties", "owner.team") != "x" || num(t, md["last-commit-timestamp-ms"]) != 1700000000123 {
			t.Fatalf("EXTERNAL properties = %v", md["properties"])
		}
		load := a.ok(http.StatusOK, http.MethodGet, tablePath(cat, sch, "ext"), nil).obj(t)
		if got := keys(load); !slices.Equal(got, []string{"metadata"}) {
			t.Fatalf("EXTERNAL load keys = %v (no commits / latest-table-version expected)", got)
		}
		if dig(load, "metadata", "table-type") != "EXTERNAL" || dig(load, "metadata", "location") != loc {
			t.Fatalf("EXTERNAL load metadata = %v", load["metadata"])
		}
		info := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/"+cat+"."+sch+".ext", nil).obj(t)
		if info["table_type"] != "EXTERNAL" || info["storage_location"] != loc {
			t.Fatalf("UC EXTERNAL table = %v", info)
		}

		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), externalBody("ext_root", "s3://bucket")), 400, "InvalidParameterValueException", "non-empty path prefix")
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), externalBody("ext_managed", "s3://bucket/x/__unitystorage/y")), 400, "InvalidParameterValueException", "__unitystorage")
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), externalBody("ext_scheme", "ftp://bucket/x")), 400, "InvalidParameterValueException")
		deltaErr(t, a.do(http.MethodPost, tablesPath(cat, sch), externalBody("ext", loc+"2")), 409, "AlreadyExistsException", "already exists")
	})

	t.Run("load head delete", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		// UC Delta case 30: load and HEAD of an unknown table.
		deltaErr(t, a.do(http.MethodGet, tablePath(cat, sch, "nope"), nil), 404, "NoSuchTableException", "Table not found")
		deltaErr(t, a.do(http.MethodGet, tablePath(cat, "nope_sch", "nope"), nil), 404, "NoSuchSchemaException")
		deltaErr(t, a.do(http.MethodGet, tablePath("nope_cat", sch, "nope"), nil), 404, "NoSuchCatalogException")
		for _, p := range []string{tablePath(cat, sch, "nope"), tablePath("nope_cat", sch, "nope")} {
			r := a.do(http.MethodHead, p, nil)
			if r.status != http.StatusNotFound || len(r.raw) != 0 {
				t.Fatalf("HEAD %s = %d %q, want 404 with no body", p, r.status, r.raw)
			}
		}

		a.createManaged(cat, sch, "m")
		a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), externalBody("e", "s3://bucket/ext/"+uniq("e")))
		// UC Delta case 30: HEAD of an existing table.
		for _, n := range []string{"m", "e"} {
			if r := a.do(http.MethodHead, tablePath(cat, sch, n), nil); r.status != http.StatusNoContent || len(r.raw) != 0 {
				t.Fatalf("HEAD %s = %d %q, want 204 with no body", n, r.status, r.raw)
			}
		}
		// UC Delta case 33: DELETE of a managed and an external table, then load is 404.
		for _, n := range []string{"m", "e"} {
			r := a.ok(http.StatusNoContent, http.MethodDelete, tablePath(cat, sch, n), nil)
			if len(r.raw) != 0 {
				t.Fatalf("DELETE body = %q", r.raw)
			}
			deltaErr(t, a.do(http.MethodGet, tablePath(cat, sch, n), nil), 404, "NoSuchTableException", "Table not found")
			if r := a.do(http.MethodHead, tablePath(cat, sch, n), nil); r.status != http.StatusNotFound {
				t.Fatalf("HEAD after delete = %d", r.status)
			}
		}
		// UC Delta case 33: DELETE of an unknown table.
		deltaErr(t, a.do(http.MethodDelete, tablePath(cat, sch, "m"), nil), 404, "NoSuchTableException", "Table not found")

		// UC REST delete of a Delta-created table.
		a.createManaged(cat, sch, "u")
		del := a.ok(http.StatusOK, http.MethodDelete, apiPrefix+"/tables/"+cat+"."+sch+".u", nil)
		if len(del.obj(t)) != 0 {
			t.Fatalf("UC delete answer %s", del.raw)
		}
		deltaErr(t, a.do(http.MethodGet, tablePath(cat, sch, "u"), nil), 404, "NoSuchTableException")
		// The name is free again.
		a.createManaged(cat, sch, "u")
	})

	t.Run("rename", func(t *testing.T) { // UC Delta case 34
		a := a.with(t)
		cat, sch := a.newSchema()
		created := a.createManaged(cat, sch, "r1")
		m := &managedTable{a: a, cat: cat, sch: sch, tbl: "r1", uuid: str(t, dig(created, "metadata", "table-uuid"))}
		m.mustUpdate("", commit(1), setProps("p", "1"))
		m.mustUpdate("", commit(2))
		before := m.load()
		a.createManaged(cat, sch, "r_taken")
		// UC Delta case 34: blank new-name.
		for _, n := range []any{nil, "", " ", "\t"} {
			deltaErr(t, a.do(http.MethodPost, tablePath(cat, sch, "r1")+"/rename", map[string]any{"new-name": n}), 400,
				"InvalidParameterValueException", "New table name is required")
		}
		deltaErr(t, a.do(http.MethodPost, tablePath(cat, sch, "r1")+"/rename", map[string]any{"new-name": "a.b"}), 400, "InvalidParameterValueException", "period")
		// UC Delta case 34: missing source, whatever the target.
		for _, target := range []string{"r_taken", "nope", "unused"} {
			deltaErr(t, a.do(http.MethodPost, tablePath(cat, sch, "nope")+"/rename", map[string]any{"new-name": target}), 404, "NoSuchTableException", "Table not found")
		}
		// UC Delta case 34: target exists.
		deltaErr(t, a.do(http.MethodPost, tablePath(cat, sch, "r1")+"/rename", map[string]any{"new-name": "r_taken"}), 409, "AlreadyExistsException", "already exists")
		if !jsonEqual(t, m.load(), before) {
			t.Fatal("a rejected rename changed the table")
		}

		// UC Delta case 34: same name is a no-op.
		r := a.ok(http.StatusNoContent, http.MethodPost, tablePath(cat, sch, "r1")+"/rename", map[string]any{"new-name": "r1"})
		if len(r.raw) != 0 {
			t.Fatalf("rename body = %q", r.raw)
		}
		same := m.load()
		for _, k := range []string{"etag", "updated-time"} {
			if dig(same, "metadata", k) != dig(before, "metadata", k) {
				t.Fatalf("rename to the same name changed %s: %v -> %v", k, dig(before, "metadata", k), dig(same, "metadata", k))
			}
		}

		// UC Delta case 34: success keeps identity, properties and commits; the old name is gone.
		a.ok(http.StatusNoContent, http.MethodPost, tablePath(cat, sch, "r1")+"/rename", map[string]any{"new-name": "r2"})
		deltaErr(t, a.do(http.MethodGet, tablePath(cat, sch, "r1"), nil), 404, "NoSuchTableException", "Table not found")
		after := a.ok(http.StatusOK, http.MethodGet, tablePath(cat, sch, "r2"), nil).obj(t)
		for _, k := range []string{"table-uuid", "location", "created-time"} {
			if dig(after, "metadata", k) != dig(before, "metadata", k) {
				t.Fatalf("rename changed %s: %v -> %v", k, dig(before, "metadata", k), dig(after, "metadata", k))
			}
		}
		if !jsonEqual(t, dig(after, "metadata", "properties"), dig(before, "metadata", "properties")) {
			t.Fatalf("rename changed properties:\n%v\n%v", dig(before, "metadata", "properties"), dig(after, "metadata", "properties"))
		}
		if !jsonEqual(t, after["commits"], before["commits"]) || latest(t, after) != 2 ||
			!slices.Equal(commitVersions(t, after), []int64{2, 1}) {
			t.Fatalf("rename changed commits: %v -> %v", before["commits"], after["commits"])
		}
		if dig(after, "metadata", "etag") == dig(before, "metadata", "etag") {
			t.Fatal("rename kept the etag")
		}
	})

	t.Run("metrics", func(t *testing.T) { // UC Delta case 35
		a := a.with(t)
		cat, sch := a.newSchema()
		created := a.createManaged(cat, sch, "mx")
		id := str(t, dig(created, "metadata", "table-uuid"))
		p := tablePath(cat, sch, "mx") + "/metrics"
		// UC Delta case 35: matching table-id.
		r := a.do(http.MethodPost, p, map[string]any{"table-id": id, "report": map[string]any{"commit-report": map[string]any{"num-files-added": 1}}})
		if r.status != http.StatusNoContent || len(r.raw) != 0 {
			t.Fatalf("metrics = %d %q", r.status, r.raw)
		}
		// UC Delta case 35: missing, mismatching table-id; unknown table.
		deltaErr(t, a.do(http.MethodPost, p, map[string]any{}), 400, "InvalidParameterValueException", "table-id is required")
		deltaErr(t, a.do(http.MethodPost, p, map[string]any{"table-id": uuid.NewString()}), 400, "InvalidParameterValueException", "does not match table")
		deltaErr(t, a.do(http.MethodPost, tablePath(cat, sch, "nope")+"/metrics", map[string]any{"table-id": id}), 404, "NoSuchTableException", "Table not found")
	})

	t.Run("unknown delta route", func(t *testing.T) {
		a := a.with(t)
		deltaErr(t, a.do(http.MethodGet, deltaPrefix+"/no/such/route", nil), 404, "NotFoundException")
	})
}
