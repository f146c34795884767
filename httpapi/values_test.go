package httpapi_test

import (
	"net/http"
	"strings"
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

// columnsCase is UC REST columns a table create must refuse, and why.
type columnsCase struct {
	name string
	cols []any
	want string
}

// refusesColumns creates a table with each case's columns: a 400 with the
// case's message, and nothing applied or created.
func refusesColumns(t *testing.T, a *api, sch, prefix string, cases []columnsCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := a.with(t)
			name := uniq(prefix)
			b := ucTableBody(sch, name, "DELTA", "/data/"+name)
			b["columns"] = c.cols
			before := a.appliedIndex()
			ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", b), 400, "INVALID_ARGUMENT", c.want)
			a.refused(before)
			ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/unity."+sch+"."+name, nil), 404, "NOT_FOUND")
		})
	}
}

func TestFastUCRESTColumnsAreValidatedWhereTheyAreWritten(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	_, sch := a.newSchema()
	good := ucCol("id", `{"name":"id","type":"long","nullable":false,"metadata":{}}`, 0)
	cases := []columnsCase{
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
		{"request index, not position", []any{ucCol("id", `{"name":"id","type":"long","nullable":false,"metadata":{}}`, 1),
			ucCol("w", `{"name":"w","type":"wibble","nullable":true,"metadata":{}}`, 0)},
			"columns[1].type_json.type: Unsupported Delta primitive type: wibble"},
	}
	refusesColumns(t, a, sch, "cols", cases)

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
				"protocol."+field+" must be at least 1, got -1.")
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
				"InvalidParameterValueException", "protocol."+field+" must be at least 1, got -3.")
			a.refused(before)
		}
		load := m.load()
		if dig(load, "metadata", "properties", "delta.minReaderVersion") != "1" || dig(load, "metadata", "properties", "delta.minWriterVersion") != "2" ||
			str(t, dig(load, "metadata", "etag")) != etag {
			t.Fatalf("a refused set-protocol changed the table: %v", dig(load, "metadata", "properties"))
		}
	})
}

func TestFastDeltaCommitFileNamesAndProtocolVersionsAreBounded(t *testing.T) {
	t.Parallel()
	a := startAPI(t)

	t.Run("a commit file-name longer than a file name can be", func(t *testing.T) {
		a := a.with(t)
		m := a.newManaged()
		for _, n := range []int{64 << 10, 256} {
			c := commit(1)
			c["commit"].(map[string]any)["file-name"] = strings.Repeat("0", n-5) + ".json"
			before := a.appliedIndex()
			deltaErr(t, m.update("", c), 400, "InvalidParameterValueException", "file_name", "at most 255 bytes")
			a.refused(before)
		}
		if load := m.load(); latest(t, load) != 0 || len(arr(t, load["commits"])) != 0 {
			t.Fatalf("a refused commit landed: %v", load["commits"])
		}
		c := commit(1)
		c["commit"].(map[string]any)["file-name"] = strings.Repeat("0", 250) + ".json"
		m.mustUpdate("", c)
	})

	t.Run("protocol version 0 on an EXTERNAL table", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		for _, field := range []string{"min-reader-version", "min-writer-version"} {
			name := uniq("ext")
			b := externalBody(name, "file:///data/"+name)
			b["protocol"].(map[string]any)[field] = 0
			before := a.appliedIndex()
			deltaErr(t, a.do(http.MethodPost, tablesPath("unity", sch), b), 400, "InvalidParameterValueException",
				"protocol."+field+" must be at least 1, got 0.")
			delete(b["protocol"].(map[string]any), field)
			deltaErr(t, a.do(http.MethodPost, tablesPath("unity", sch), b), 400, "InvalidParameterValueException",
				"protocol."+field+" is required.")
			a.refused(before)
			deltaErr(t, a.do(http.MethodGet, tablePath("unity", sch, name), nil), 404, "NoSuchTableException")
		}
		name := uniq("ext")
		created := a.ok(http.StatusOK, http.MethodPost, tablesPath("unity", sch), externalBody(name, "file:///data/"+name)).obj(t)
		m := &managedTable{a: a, cat: "unity", sch: sch, tbl: name, uuid: str(t, dig(created, "metadata", "table-uuid"))}
		before := a.appliedIndex()
		deltaErr(t, m.update("", map[string]any{"action": "set-protocol", "protocol": map[string]any{"min-reader-version": 0, "min-writer-version": 2}}),
			400, "InvalidParameterValueException", "protocol.min-reader-version must be at least 1, got 0.")
		a.refused(before)
	})
}

func TestFastUCRESTColumnPositionsAndPartitionIndexes(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	_, sch := a.newSchema()
	col := func(name string, pos, part any) map[string]any {
		c := map[string]any{"name": name, "type_json": `{"name":"` + name + `","type":"long","nullable":true,"metadata":{}}`}
		if pos != nil {
			c["position"] = pos
		}
		if part != nil {
			c["partition_index"] = part
		}
		return c
	}
	cases := []columnsCase{
		{"negative position", []any{col("a", 0, nil), col("b", -1, nil)}, "columns[1].position must not be negative, got -1."},
		{"two columns at one position", []any{col("a", 1, nil), col("b", 1, nil)}, "columns[1].position 1 is also columns[0]'s."},
		{"a position missing beside others", []any{col("a", 0, nil), col("b", nil, nil)}, "columns[1].position is required"},
		{"negative partition_index", []any{col("a", 0, -2), col("b", 1, nil)}, "columns[0].partition_index must not be negative, got -2."},
		{"a repeated partition_index", []any{col("a", 0, 0), col("b", 1, 0)}, "columns[1].partition_index 0 is also columns[0]'s."},
	}
	refusesColumns(t, a, sch, "pos", cases)
	t.Run("positions given for none keep the request's order", func(t *testing.T) {
		a := a.with(t)
		name := uniq("pos")
		b := ucTableBody(sch, name, "DELTA", "/data/"+name)
		b["columns"] = []any{col("b", nil, 1), col("a", nil, 0)}
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", b)
		info := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/unity."+sch+"."+name, nil).obj(t)
		cols := arr(t, info["columns"])
		if len(cols) != 2 || dig(cols[0], "name") != "b" || num(t, dig(cols[0], "partition_index")) != 1 || num(t, dig(cols[1], "partition_index")) != 0 {
			t.Fatalf("columns = %v", info["columns"])
		}
	})
}

// A location spelled with "." or ".." segments is refused on every scheme
// but file://, whose path is resolved: an object store would take the
// dots as part of a key, while a client resolving them reaches elsewhere.
func TestFastDotSegmentLocationsAreRefused(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	_, sch := a.newSchema()
	for _, loc := range []string{"s3://bucket/a/../b", "s3://bucket/a/%2E%2E/b", "gs://bucket/a/./b", "abfss://c@acct.dfs.core.windows.net/x/..", "s3a://bucket/../b"} {
		t.Run(loc, func(t *testing.T) {
			a := a.with(t)
			before := a.appliedIndex()
			name := uniq("dots")
			ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, name, "DELTA", loc)), 400, "INVALID_ARGUMENT",
				"storage_location", "'.' or '..'")
			deltaErr(t, a.do(http.MethodPost, tablesPath("unity", sch), externalBody(name, loc)), 400, "InvalidParameterValueException",
				"location", "'.' or '..'")
			ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": name, "storage_root": loc}), 400, "INVALID_ARGUMENT",
				"storage_root", "'.' or '..'")
			a.refused(before)
		})
	}
}

func TestFastInvalidUTF8NamesTheField(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", "{\"name\":\"u8f_a\",\"comment\":\"ok\xff\"}"), 400, "INVALID_ARGUMENT",
		"UTF-8", "'comment'")
	ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", "{\"name\":\"u8f_b\",\"properties\":{\"a\":\"x\",\"k\":\"\xc3\"}}"), 400, "INVALID_ARGUMENT",
		"UTF-8", "'properties.k'")
	ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", "{\"name\":\"u8f_c\",\"properties\":{\"k\xff\":\"v\"}}"), 400, "INVALID_ARGUMENT",
		"UTF-8", "A key in 'properties'")
	_, sch := a.newSchema()
	b := `{"name":"u8f_t","catalog_name":"unity","schema_name":"` + sch + `","table_type":"EXTERNAL","data_source_format":"CSV",` +
		`"storage_location":"/data/u8f_t","columns":[{"name":"a","position":0,"type_json":"{}"},{"name":"b` + "\xfe" + `"}]}`
	ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", b), 400, "INVALID_ARGUMENT", "UTF-8", "'columns[1].name'")
	deltaErr(t, a.do(http.MethodPost, stagingPath("unity", "default"), "{\"name\":\"u8f_d\xc3\"}"), 400, "InvalidParameterValueException",
		"UTF-8", "'name'")
	ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", "{\"n\xffame\":\"u8f_e\"}"), 400, "INVALID_ARGUMENT", "A key of the JSON request body")
}
