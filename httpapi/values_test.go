package httpapi_test

import (
	"net/http"
	"testing"
)

// Values that are well-formed JSON but wrong are refused with a 400 in the
// protocol's envelope that names the field, before anything is proposed.

// appliedIndex is the index the node's state reflects; a refused request
// must leave it where it was.
func (a *api) appliedIndex() uint64 {
	a.t.Helper()
	return requireIndex(a.t, a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs", nil))
}

// refused checks that r was refused and nothing was proposed since before.
func (a *api) refused(before uint64) {
	a.t.Helper()
	if after := a.appliedIndex(); after != before {
		a.t.Fatalf("a refused request moved the applied index from %d to %d", before, after)
	}
}

// ucCol is a UC REST column.
func ucCol(name, typeJSON string, position int) map[string]any {
	return map[string]any{"name": name, "type_json": typeJSON, "position": position}
}

func TestFastUCRESTColumnsAreValidatedWhereTheyAreWritten(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	_, sch := a.newSchema()
	good := ucCol("id", `{"name":"id","type":"long","nullable":false,"metadata":{}}`, 0)
	cases := []struct {
		name string
		cols []any
		want string
	}{
		{"unknown primitive", []any{ucCol("w", `{"name":"w","type":"wibble","nullable":true,"metadata":{}}`, 0)},
			"columns[0].type_json.type: Unsupported Delta primitive type: wibble"},
		{"unknown nested primitive", []any{good, ucCol("a", `{"name":"a","type":{"type":"array","elementType":"wibble","containsNull":true},"nullable":true,"metadata":{}}`, 1)},
			"columns[1].type_json.type.elementType: Unsupported Delta primitive type: wibble"},
		{"a name listed twice", []any{good, ucCol("ID", `{"name":"ID","type":"string","nullable":true,"metadata":{}}`, 1)},
			"Duplicate field name (case-insensitive) in columns[1].type_json: ID"},
		{"missing nullable", []any{ucCol("id", `{"name":"id","type":"long","metadata":{}}`, 0)},
			"columns[0].type_json.nullable is required."},
		{"missing metadata", []any{ucCol("id", `{"name":"id","type":"long","nullable":true}`, 0)},
			"columns[0].type_json.metadata is required."},
		{"name differs from type_json", []any{ucCol("id", `{"name":"other","type":"long","nullable":true,"metadata":{}}`, 0)},
			"columns[0].name 'id' does not match the name in columns[0].type_json: 'other'"},
		// Errors name the column as the request lists it, whatever its position.
		{"request index, not position", []any{good, ucCol("w", `{"name":"w","type":"wibble","nullable":true,"metadata":{}}`, -1)},
			"columns[1].type_json.type: Unsupported Delta primitive type: wibble"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := a.with(t)
			name := uniq("cols")
			b := ucTableBody(sch, name, "DELTA", "/data/"+name)
			b["columns"] = c.cols
			before := a.appliedIndex()
			ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", b), 400, "INVALID_ARGUMENT", c.want)
			a.refused(before)
			ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/unity."+sch+"."+name, nil), 404, "NOT_FOUND")
		})
	}

	t.Run("the Delta API words the same fault the same way", func(t *testing.T) {
		a := a.with(t)
		name := uniq("wib")
		b := externalBody(name, "file:///data/"+name)
		b["columns"] = map[string]any{"type": "struct", "fields": []any{
			map[string]any{"name": "w", "type": "wibble", "nullable": true, "metadata": map[string]any{}}}}
		deltaErr(t, a.do(http.MethodPost, tablesPath("unity", sch), b), 400, "InvalidParameterValueException",
			"columns.fields[0].type: Unsupported Delta primitive type: wibble")
	})

	t.Run("what is accepted reads back", func(t *testing.T) {
		a := a.with(t)
		name := uniq("ok")
		b := ucTableBody(sch, name, "DELTA", "/data/"+name)
		b["columns"] = []any{ucCol("b", `{"name":"b","type":"decimal(10,2)","nullable":true,"metadata":{}}`, 1), good}
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", b)
		info := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/unity."+sch+"."+name, nil).obj(t)
		cols := arr(t, info["columns"])
		if len(cols) != 2 || dig(cols[0], "name") != "id" || dig(cols[1], "type_text") != "decimal(10,2)" {
			t.Fatalf("columns = %v", info["columns"])
		}
	})
}

func TestFastNullPropertyValuesAreRefused(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	nullProps := map[string]any{"kept": "v", "gone": nil}

	t.Run("UC REST catalogs", func(t *testing.T) {
		a := a.with(t)
		name := uniq("cat")
		before := a.appliedIndex()
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": name, "properties": nullProps}),
			400, "INVALID_ARGUMENT", "properties['gone'] must be a string, not null")
		a.refused(before)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs/"+name, nil), 404, "NOT_FOUND")
	})

	t.Run("UC REST catalog update", func(t *testing.T) {
		a := a.with(t)
		name := uniq("cat")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": name, "properties": map[string]any{"k": "v"}})
		before := a.appliedIndex()
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/catalogs/"+name, map[string]any{"properties": nullProps}),
			400, "INVALID_ARGUMENT", "properties['gone']")
		a.refused(before)
		got := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/"+name, nil).obj(t)
		if props := objOf(t, got["properties"]); len(props) != 1 || props["k"] != "v" {
			t.Fatalf("properties after a refused update: %v", props)
		}
	})

	t.Run("UC REST schemas", func(t *testing.T) {
		a := a.with(t)
		name := uniq("s")
		before := a.appliedIndex()
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": name, "catalog_name": "unity", "properties": nullProps}),
			400, "INVALID_ARGUMENT", "properties['gone']")
		a.refused(before)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/unity."+name, nil), 404, "NOT_FOUND")
	})

	t.Run("UC REST schema update", func(t *testing.T) {
		a := a.with(t)
		name := uniq("s")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": name, "catalog_name": "unity"})
		before := a.appliedIndex()
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/schemas/unity."+name, map[string]any{"properties": nullProps}),
			400, "INVALID_ARGUMENT", "properties['gone']")
		a.refused(before)
		got := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas/unity."+name, nil).obj(t)
		if props := objOf(t, got["properties"]); len(props) != 0 {
			t.Fatalf("properties after a refused update: %v", props)
		}
	})

	t.Run("UC REST tables", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		name := uniq("t")
		b := ucTableBody(sch, name, "CSV", "/data/"+name)
		b["properties"] = nullProps
		before := a.appliedIndex()
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", b), 400, "INVALID_ARGUMENT", "properties['gone']")
		a.refused(before)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/unity."+sch+"."+name, nil), 404, "NOT_FOUND")
	})

	t.Run("Delta API create", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		name := uniq("ext")
		b := externalBody(name, "file:///data/"+name)
		b["properties"] = nullProps
		before := a.appliedIndex()
		deltaErr(t, a.do(http.MethodPost, tablesPath("unity", sch), b), 400, "InvalidParameterValueException", "properties['gone'] must be a string, not null")
		a.refused(before)
		deltaErr(t, a.do(http.MethodGet, tablePath("unity", sch, name), nil), 404, "NoSuchTableException")
	})

	t.Run("Delta API set-properties", func(t *testing.T) {
		a := a.with(t)
		m := a.newManaged()
		etag := m.etag()
		before := a.appliedIndex()
		deltaErr(t, m.update("", map[string]any{"action": "set-properties", "updates": nullProps}), 400,
			"InvalidParameterValueException", "updates['gone'] must be a string, not null")
		a.refused(before)
		load := m.load()
		if props := objOf(t, dig(load, "metadata", "properties")); props["kept"] != nil || props["gone"] != nil || str(t, dig(load, "metadata", "etag")) != etag {
			t.Fatalf("a refused set-properties changed the table: %v", props)
		}
	})
}

func TestFastDeltaValuesOutOfRangeAreRefused(t *testing.T) {
	t.Parallel()
	a := startAPI(t)

	t.Run("control characters in a commit's file-name", func(t *testing.T) {
		a := a.with(t)
		m := a.newManaged()
		for _, bad := range []string{"\x00", "\n", "\x7f", "\u0085"} {
			c := commit(1)
			c["commit"].(map[string]any)["file-name"] = "00000000000000000001" + bad + ".json"
			before := a.appliedIndex()
			deltaErr(t, m.update("", c), 400, "InvalidParameterValueException", "control characters", "file_name")
			a.refused(before)
		}
		if load := m.load(); latest(t, load) != 0 || len(arr(t, load["commits"])) != 0 {
			t.Fatalf("a refused commit landed: %v", load["commits"])
		}
	})

	t.Run("negative latest-published-version", func(t *testing.T) {
		a := a.with(t)
		m := a.newManaged()
		m.mustUpdate("", commit(1))
		before := a.appliedIndex()
		deltaErr(t, m.update("", backfill(-1)), 400, "InvalidParameterValueException", "latest-published-version", "-1")
		deltaErr(t, m.update("", commit(2), backfill(-5)), 400, "InvalidParameterValueException", "latest-published-version")
		a.refused(before)
		if load := m.load(); latest(t, load) != 1 || len(arr(t, load["commits"])) != 1 {
			t.Fatalf("state after refused backfills: %v", load)
		}
	})

	t.Run("negative protocol versions of an EXTERNAL table", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		for _, field := range []string{"min-reader-version", "min-writer-version"} {
			name := uniq("ext")
			b := externalBody(name, "file:///data/"+name)
			b["protocol"].(map[string]any)[field] = -1
			before := a.appliedIndex()
			deltaErr(t, a.do(http.MethodPost, tablesPath("unity", sch), b), 400, "InvalidParameterValueException",
				"protocol."+field+" must not be negative, got -1.")
			a.refused(before)
			deltaErr(t, a.do(http.MethodGet, tablePath("unity", sch, name), nil), 404, "NoSuchTableException")
		}
	})

	t.Run("negative protocol versions in set-protocol on an EXTERNAL table", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		name := uniq("ext")
		created := a.ok(http.StatusOK, http.MethodPost, tablesPath("unity", sch), externalBody(name, "file:///data/"+name)).obj(t)
		m := &managedTable{a: a, cat: "unity", sch: sch, tbl: name, uuid: str(t, dig(created, "metadata", "table-uuid"))}
		etag := m.etag()
		for _, field := range []string{"min-reader-version", "min-writer-version"} {
			p := map[string]any{"min-reader-version": 1, "min-writer-version": 2}
			p[field] = -3
			before := a.appliedIndex()
			deltaErr(t, m.update("", map[string]any{"action": "set-protocol", "protocol": p}), 400,
				"InvalidParameterValueException", "protocol."+field+" must not be negative, got -3.")
			a.refused(before)
		}
		load := m.load()
		if dig(load, "metadata", "properties", "delta.minReaderVersion") != "1" || dig(load, "metadata", "properties", "delta.minWriterVersion") != "2" ||
			str(t, dig(load, "metadata", "etag")) != etag {
			t.Fatalf("a refused set-protocol changed the table: %v", dig(load, "metadata", "properties"))
		}
	})
}
