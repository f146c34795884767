package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/httpapi/deltaapi"
	"github.com/raftcat/raftcat/storage"
)

func TestFastDeltaConfigAndStaging(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	const cfg = deltaPrefix + "/config"

	t.Run("config resolves the catalog", func(t *testing.T) { // UC Delta case 1
		a := a.with(t)
		cat := uniq("warehouse")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": cat})
		r := a.ok(http.StatusOK, http.MethodGet, cfg+"?catalog="+cat+"&protocol-versions=1.0", nil)
		requireIndex(t, r)
		body := r.obj(t)
		if got := keys(body); !slices.Equal(got, []string{"endpoints", "protocol-version"}) {
			t.Fatalf("config keys = %v", got)
		}
		if body["protocol-version"] != "1.0" {
			t.Fatalf("protocol-version = %v", body["protocol-version"])
		}
		eps := strs(t, body["endpoints"])
		for _, want := range []string{
			"POST /v1/catalogs/" + cat + "/schemas/{schema}/staging-tables",
			"POST /v1/catalogs/" + cat + "/schemas/{schema}/tables",
			"GET /v1/catalogs/" + cat + "/schemas/{schema}/tables/{table}",
			"POST /v1/catalogs/" + cat + "/schemas/{schema}/tables/{table}",
			"GET /v1/staging-tables/{table_id}/credentials",
		} {
			if !slices.Contains(eps, want) {
				t.Fatalf("endpoints lack %q: %v", want, eps)
			}
		}
		for _, e := range eps {
			if strings.Contains(e, "{catalog}") {
				t.Fatalf("endpoint %q still has the catalog template", e)
			}
		}
	})

	t.Run("config parameter errors", func(t *testing.T) {
		a := a.with(t)
		// UC Delta case 2
		deltaErr(t, a.do(http.MethodGet, cfg+"?catalog=&protocol-versions=1.0", nil), 400, "InvalidParameterValueException",
			"catalog", "Must supply a proper catalog in catalog parameter.")
		// UC Delta case 3
		deltaErr(t, a.do(http.MethodGet, cfg+"?protocol-versions=1.0", nil), 400, "InvalidParameterValueException", "catalog")
		deltaErr(t, a.do(http.MethodGet, cfg+"?catalog=unity", nil), 400, "InvalidParameterValueException", "protocol-versions")
		deltaErr(t, a.do(http.MethodGet, cfg, nil), 400, "InvalidParameterValueException")
		// UC Delta case 4
		deltaErr(t, a.do(http.MethodGet, cfg+"?catalog=nope&protocol-versions=1.0", nil), 404, "NoSuchCatalogException", "Catalog not found: nope")
		// Malformed protocol-versions lists (raftcat validates them).
		for _, bad := range []string{"", "abc", "1", "1.x", "1.0,,2.0", "v1.0"} {
			deltaErr(t, a.do(http.MethodGet, cfg+"?catalog=unity&protocol-versions="+bad, nil), 400, "InvalidParameterValueException", "protocol-versions")
		}
	})

	t.Run("config answers 1.0", func(t *testing.T) { // UC Delta case 5
		a := a.with(t)
		for _, v := range []string{"1.1,2.3", "1.0", "1.0,%202.0"} {
			r := a.ok(http.StatusOK, http.MethodGet, cfg+"?catalog=unity&protocol-versions="+v, nil)
			if got := dig(r.body, "protocol-version"); got != "1.0" {
				t.Fatalf("protocol-versions=%s: answer %v, want 1.0", v, got)
			}
		}
	})

	t.Run("staging happy path", func(t *testing.T) { // UC Delta case 6
		a := a.with(t)
		cat, sch := a.newSchema()
		r := a.ok(http.StatusOK, http.MethodPost, stagingPath(cat, sch), map[string]any{"name": "t"})
		stg := r.obj(t)
		if got := keys(stg); !slices.Equal(got, []string{"location", "required-properties", "required-protocol",
			"storage-credentials", "suggested-properties", "suggested-protocol", "table-id", "table-type"}) {
			t.Fatalf("staging keys = %v", got)
		}
		id := str(t, stg["table-id"])
		if _, err := uuid.Parse(id); err != nil {
			t.Fatalf("table-id %q is not a uuid", id)
		}
		if stg["table-type"] != "MANAGED" {
			t.Fatalf("table-type = %v", stg["table-type"])
		}
		loc := str(t, stg["location"])
		if !strings.HasPrefix(loc, "file:///") || !strings.HasSuffix(loc, "/"+id) {
			t.Fatalf("location %q does not end in the table id", loc)
		}

		creds := arr(t, stg["storage-credentials"])
		if len(creds) != 1 {
			t.Fatalf("storage-credentials = %v, want one", creds)
		}
		cred := objOf(t, creds[0])
		if cred["operation"] != "READ_WRITE" || cred["prefix"] != loc {
			t.Fatalf("credential = %v", cred)
		}
		if cfg := objOf(t, cred["config"]); len(cfg) != 0 {
			t.Fatalf("credential config for file:// = %v, want {}", cfg)
		}

		rp := objOf(t, stg["required-protocol"])
		if num(t, rp["min-reader-version"]) != 3 || num(t, rp["min-writer-version"]) != 7 {
			t.Fatalf("required-protocol versions = %v", rp)
		}
		if got := sorted(strs(t, rp["reader-features"])); !slices.Equal(got, []string{"catalogManaged", "deletionVectors", "v2Checkpoint", "vacuumProtocolCheck"}) {
			t.Fatalf("required reader-features = %v", got)
		}
		if got := sorted(strs(t, rp["writer-features"])); !slices.Equal(got, []string{"catalogManaged", "deletionVectors", "inCommitTimestamp", "v2Checkpoint", "vacuumProtocolCheck"}) {
			t.Fatalf("required writer-features = %v", got)
		}
		sp := objOf(t, stg["suggested-protocol"])
		if got := keys(sp); !slices.Equal(got, []string{"reader-features", "writer-features"}) {
			t.Fatalf("suggested-protocol keys = %v (no versions expected)", got)
		}
		if got := sorted(strs(t, sp["reader-features"])); !slices.Equal(got, []string{"columnMapping"}) {
			t.Fatalf("suggested reader-features = %v", got)
		}
		if got := sorted(strs(t, sp["writer-features"])); !slices.Equal(got, []string{"columnMapping", "domainMetadata", "rowTracking"}) {
			t.Fatalf("suggested writer-features = %v", got)
		}

		req := objOf(t, stg["required-properties"])
		wantReq := map[string]any{
			"delta.enableDeletionVectors":         "true",
			"delta.checkpointPolicy":              "v2",
			"delta.enableInCommitTimestamps":      "true",
			"delta.checkpoint.writeStatsAsStruct": "true",
			"delta.checkpoint.writeStatsAsJson":   "true",
			"io.unitycatalog.tableId":             id,
		}
		if len(req) != len(wantReq) {
			t.Fatalf("required-properties = %v, want %v", req, wantReq)
		}
		for k, v := range wantReq {
			if req[k] != v {
				t.Fatalf("required-properties[%q] = %v, want %v", k, req[k], v)
			}
		}

		sugg := objOf(t, stg["suggested-properties"])
		wantSugg := map[string]any{
			"delta.columnMapping.mode":                                 "name",
			"delta.columnMapping.maxColumnId":                          nil,
			"delta.enableRowTracking":                                  "true",
			"delta.rowTracking.materializedRowIdColumnName":            nil,
			"delta.rowTracking.materializedRowCommitVersionColumnName": nil,
			"delta.randomizeFilePrefixes":                              "true",
			"delta.parquet.compression.codec":                          "zstd",
		}
		if len(sugg) != len(wantSugg) {
			t.Fatalf("suggested-properties = %v, want %v", sugg, wantSugg)
		}
		for k, v := range wantSugg {
			got, present := sugg[k]
			if !present || got != v {
				t.Fatalf("suggested-properties[%q] = %v (present %v), want %v", k, got, present, v)
			}
		}
		// The nulls are real JSON nulls on the wire.
		if !strings.Contains(string(r.raw), `"delta.columnMapping.maxColumnId":null`) {
			t.Fatalf("suggested-properties does not carry a JSON null: %s", r.raw)
		}
	})

	t.Run("staging name required", func(t *testing.T) { // UC Delta case 7
		a := a.with(t)
		cat, sch := a.newSchema()
		for _, body := range []any{map[string]any{}, map[string]any{"name": ""}, map[string]any{"name": "   "}, nil, "null"} {
			deltaErr(t, a.do(http.MethodPost, stagingPath(cat, sch), body), 400, "InvalidParameterValueException", "Staging table name is required")
		}
	})

	t.Run("staging name syntax", func(t *testing.T) { // UC Delta case 8
		a := a.with(t)
		cat, sch := a.newSchema()
		for _, n := range []string{"a.b", "a b", "a/b", "a\tb"} {
			deltaErr(t, a.do(http.MethodPost, stagingPath(cat, sch), map[string]any{"name": n}), 400, "InvalidParameterValueException",
				"Name cannot contain a period, space, forward-slash, or control characters")
		}
		deltaErr(t, a.do(http.MethodPost, stagingPath(cat, sch), map[string]any{"name": strings.Repeat("n", 256)}), 400,
			"InvalidParameterValueException", "Name cannot be longer than 255 characters")
		// Name syntax is checked before the namespace.
		deltaErr(t, a.do(http.MethodPost, stagingPath("nope", "nope"), map[string]any{"name": "a.b"}), 400, "InvalidParameterValueException", "period")
		a.ok(http.StatusOK, http.MethodPost, stagingPath(cat, sch), map[string]any{"name": strings.Repeat("n", 255)})
		a.ok(http.StatusOK, http.MethodPost, stagingPath(cat, sch), map[string]any{"name": "a-b@c_D9"})
	})

	t.Run("staging unknown namespace", func(t *testing.T) { // UC Delta case 9
		a := a.with(t)
		deltaErr(t, a.do(http.MethodPost, stagingPath("nope_cat", "default"), map[string]any{"name": "t"}), 404, "NoSuchCatalogException", "not found", "nope_cat")
		deltaErr(t, a.do(http.MethodPost, stagingPath("unity", "nope_sch"), map[string]any{"name": "t"}), 404, "NoSuchSchemaException", "not found", "nope_sch")
	})

	t.Run("staging existing table", func(t *testing.T) { // UC Delta case 10
		a := a.with(t)
		cat, sch := a.newSchema()
		a.createManaged(cat, sch, "taken")
		deltaErr(t, a.do(http.MethodPost, stagingPath(cat, sch), map[string]any{"name": "taken"}), 409, "AlreadyExistsException", "Table already exists")
	})

	t.Run("staging same name twice", func(t *testing.T) { // UC Delta case 11
		a := a.with(t)
		cat, sch := a.newSchema()
		s1, s2 := a.stage(cat, sch, "twice"), a.stage(cat, sch, "twice")
		if s1["table-id"] == s2["table-id"] || s1["location"] == s2["location"] {
			t.Fatalf("two stagings share id or location: %v / %v", s1, s2)
		}
	})

	t.Run("staging credentials", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		stg := a.stage(cat, sch, "creds")
		id, loc := str(t, stg["table-id"]), str(t, stg["location"])
		// UC Delta case 12
		r := a.ok(http.StatusOK, http.MethodGet, deltaPrefix+"/staging-tables/"+id+"/credentials", nil)
		creds := arr(t, dig(r.body, "storage-credentials"))
		if len(creds) != 1 || dig(creds, 0, "operation") != "READ_WRITE" || dig(creds, 0, "prefix") != loc {
			t.Fatalf("staging credentials = %s", r.raw)
		}
		if len(objOf(t, dig(creds, 0, "config"))) != 0 {
			t.Fatalf("credential config for file:// = %s, want {}", r.raw)
		}

		// UC Delta case 13
		random := uuid.NewString()
		deltaErr(t, a.do(http.MethodGet, deltaPrefix+"/staging-tables/"+random+"/credentials", nil), 404, "NoSuchTableException", "Staging table not found", random)
		deltaErr(t, a.do(http.MethodGet, deltaPrefix+"/staging-tables/not-a-uuid/credentials", nil), 400, "InvalidParameterValueException")

		ext := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), externalBody("ext_creds", "s3://bucket/ext/creds")).obj(t)
		extID := str(t, dig(ext, "metadata", "table-uuid"))
		deltaErr(t, a.do(http.MethodGet, deltaPrefix+"/staging-tables/"+extID+"/credentials", nil), 404, "NoSuchTableException", "Staging table not found")
	})

	t.Run("managed roots", func(t *testing.T) { // §5.4
		a := a.with(t)
		root := "file://" + t.TempDir()
		cat := uniq("rooted")
		c := a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": cat, "storage_root": root + "/c/"}).obj(t)
		catLoc := root + "/c/__unitystorage/catalogs/" + str(t, c["id"])
		if c["storage_root"] != root+"/c" || c["storage_location"] != catLoc {
			t.Fatalf("catalog storage_root %v storage_location %v, want %s", c["storage_root"], c["storage_location"], catLoc)
		}
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "plain", "catalog_name": cat})
		stg := a.stage(cat, "plain", "t")
		if want := catLoc + "/tables/" + str(t, stg["table-id"]); stg["location"] != want {
			t.Fatalf("staging location %v, want %s", stg["location"], want)
		}
		s := a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "own", "catalog_name": cat, "storage_root": root + "/s"}).obj(t)
		schLoc := root + "/s/__unitystorage/schemas/" + str(t, s["schema_id"])
		if s["storage_location"] != schLoc {
			t.Fatalf("schema storage_location %v, want %s", s["storage_location"], schLoc)
		}
		stg = a.stage(cat, "own", "t")
		if want := schLoc + "/tables/" + str(t, stg["table-id"]); stg["location"] != want {
			t.Fatalf("staging location %v, want %s", stg["location"], want)
		}
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": uniq("badroot"), "storage_root": "ftp://x/y"}), 400, "INVALID_ARGUMENT")
	})

	t.Run("staging credentials after create", func(t *testing.T) { // §2.3 quirk
		a := a.with(t)
		cat, sch := a.newSchema()
		created := a.createManaged(cat, sch, "fin")
		id := str(t, dig(created, "metadata", "table-uuid"))
		r := a.ok(http.StatusOK, http.MethodGet, deltaPrefix+"/staging-tables/"+id+"/credentials", nil)
		if dig(r.body, "storage-credentials", 0, "prefix") != dig(created, "metadata", "location") {
			t.Fatalf("credentials after create = %s", r.raw)
		}
	})

	t.Run("table credentials", func(t *testing.T) { // UC Delta case 36
		a := a.with(t)
		cat, sch := a.newSchema()
		created := a.createManaged(cat, sch, "tc")
		loc := str(t, dig(created, "metadata", "location"))
		// UC Delta case 36: READ and READ_WRITE name the operation and the table location.
		for _, op := range []string{"READ", "READ_WRITE"} {
			r := a.ok(http.StatusOK, http.MethodGet, tablePath(cat, sch, "tc")+"/credentials?operation="+op, nil)
			creds := arr(t, dig(r.body, "storage-credentials"))
			if len(creds) != 1 || dig(creds, 0, "operation") != op || dig(creds, 0, "prefix") != loc {
				t.Fatalf("credentials(%s) = %s", op, r.raw)
			}
		}
		// UC Delta case 36: missing or invalid operation.
		for _, q := range []string{"", "?operation=WRITE"} {
			deltaErr(t, a.do(http.MethodGet, tablePath(cat, sch, "tc")+"/credentials"+q, nil), 400, "InvalidParameterValueException")
		}
		// UC Delta case 36: unknown table.
		deltaErr(t, a.do(http.MethodGet, tablePath(cat, sch, "nope")+"/credentials?operation=READ", nil), 404, "NoSuchTableException", "not found")
	})

}

// UC Delta case 36 (cloud locations): with S3 keys configured, an s3://
// table gets them, and only S3 keys, with an expiry; a file:// table none.
func TestFastCloudCredentialsAreVended(t *testing.T) {
	t.Parallel()
	a := startAPIWith(t, deltaapi.Config{Credentials: storage.StaticCredentials{
		S3AccessKeyID: "AKIDEXAMPLE", S3SecretAccessKey: "secret", GCSOAuthToken: "gcs-token"}})
	t.Run("table credentials for s3", func(t *testing.T) { // UC Delta case 36
		a := a.with(t)
		cat, sch := a.newSchema()
		loc := "s3://bucket/ext/" + uniq("creds")
		a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), externalBody("s3creds", loc))
		r := a.ok(http.StatusOK, http.MethodGet, tablePath(cat, sch, "s3creds")+"/credentials?operation=READ", nil)
		creds := arr(t, dig(r.body, "storage-credentials"))
		if len(creds) != 1 || dig(creds, 0, "operation") != "READ" || dig(creds, 0, "prefix") != loc {
			t.Fatalf("s3 credentials = %s", r.raw)
		}
		// UC Delta case 36: an s3:// location gets the S3 config keys, and only those.
		cfg := objOf(t, dig(creds, 0, "config"))
		for _, k := range []string{"s3.access-key-id", "s3.secret-access-key"} {
			if v, _ := cfg[k].(string); v == "" {
				t.Fatalf("config[%q] = %v, want a non-empty string: %s", k, cfg[k], r.raw)
			}
		}
		for k := range cfg {
			if !strings.HasPrefix(k, "s3.") {
				t.Fatalf("config key %q is not an S3 key: %s", k, r.raw)
			}
		}
	})
	t.Run("gcs credentials carry an expiry", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), externalBody("gcs", "gs://bucket/"+uniq("g")))
		r := a.ok(http.StatusOK, http.MethodGet, tablePath(cat, sch, "gcs")+"/credentials?operation=READ_WRITE", nil)
		cred := objOf(t, arr(t, dig(r.body, "storage-credentials"))[0])
		cfg := objOf(t, cred["config"])
		if len(cfg) != 1 || cfg["gcs.oauth-token"] != "gcs-token" || cred["expiration-time-ms"] == nil {
			t.Fatalf("gcs credential = %s", r.raw)
		}
	})
}
