package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// Request bodies are JSON: a body of another media type is a 415 in the
// protocol's envelope, whatever it contains.
func TestFastBodyMediaType(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	for _, ct := range []string{"application/xml", "multipart/form-data; boundary=x", "text/plain"} {
		name := uniq("ct")
		r := a.do(http.MethodPost, apiPrefix+"/catalogs", `{"name":"`+name+`"}`, "Content-Type", ct)
		ucErr(t, r, 415, "INVALID_ARGUMENT", "Content-Type")
		r = a.do(http.MethodPost, stagingPath("unity", "default"), `{"name":"`+name+`"}`, "Content-Type", ct)
		deltaErr(t, r, 415, "InvalidParameterValueException", "Content-Type")
		if r := a.do(http.MethodGet, apiPrefix+"/catalogs/"+name, nil); r.status != http.StatusNotFound {
			t.Fatalf("a %s body created catalog %s: status %d", ct, name, r.status)
		}
	}
	// What clients send: JSON with or without a charset, no Content-Type,
	// and curl -d's form type around a JSON body.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON",
		"", "application/x-www-form-urlencoded"} {
		req, _ := http.NewRequest(http.MethodPost, a.base+apiPrefix+"/catalogs", strings.NewReader(`{"name":"`+uniq("ok")+`"}`))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Content-Type %q: status %d, want 200", ct, resp.StatusCode)
		}
	}
}

// A key given twice in one object is refused on every route instead of
// the last one winning.
func TestFastDuplicateKeysRefused(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	r := a.do(http.MethodPost, apiPrefix+"/catalogs", `{"name":"dup_a","name":"dup_b"}`)
	ucErr(t, r, 400, "INVALID_ARGUMENT", "Duplicate key 'name'")
	r = a.do(http.MethodPost, apiPrefix+"/catalogs", `{"name":"dup_c","properties":{"k":"1","\u006b":"2"}}`)
	ucErr(t, r, 400, "INVALID_ARGUMENT", "Duplicate key 'k'")
	r = a.do(http.MethodPost, stagingPath("unity", "default"), `{"name":"dup_d", "name" : "dup_e"}`)
	deltaErr(t, r, 400, "InvalidParameterValueException", "Duplicate key 'name'")
	for _, n := range []string{"dup_a", "dup_b", "dup_c"} {
		if r := a.do(http.MethodGet, apiPrefix+"/catalogs/"+n, nil); r.status != http.StatusNotFound {
			t.Fatalf("catalog %s exists after a refused create: %s", n, r.raw)
		}
	}
	// The same key in sibling and nested objects is fine.
	a.ok(200, http.MethodPost, apiPrefix+"/catalogs", `{"name":"dup_ok","properties":{"name":"x","comment":"y"},"comment":"name"}`)
}

// Text that is not valid UTF-8 (raw bytes, or an escaped lone surrogate)
// is refused instead of being stored with replacement characters.
func TestFastInvalidUTF8Refused(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	r := a.do(http.MethodPost, apiPrefix+"/catalogs", "{\"name\":\"u8_a\",\"comment\":\"\xff\xfe\"}")
	ucErr(t, r, 400, "INVALID_ARGUMENT", "UTF-8")
	r = a.do(http.MethodPost, apiPrefix+"/catalogs", `{"name":"u8_b","comment":"\ud800"}`)
	ucErr(t, r, 400, "INVALID_ARGUMENT", "surrogate")
	r = a.do(http.MethodPost, stagingPath("unity", "default"), "{\"name\":\"u8_c\xc3\"}")
	deltaErr(t, r, 400, "InvalidParameterValueException", "UTF-8")
	// A paired surrogate escape is a real character.
	got := a.ok(200, http.MethodPost, apiPrefix+"/catalogs", `{"name":"u8_d","comment":"\ud83d\ude00"}`)
	if c := dig(got.body, "comment"); c != "\U0001F600" {
		t.Fatalf("comment %q, want the emoji", c)
	}
}

// Values from the request are quoted in error messages by a short prefix,
// not in full: a 2 MiB name does not come back in a 2 MiB answer.
func TestFastLongInputNotEchoed(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	long := strings.Repeat("n", 2<<20)
	check := func(what string, r reply) {
		t.Helper()
		if r.status < 400 || r.status >= 500 {
			t.Fatalf("%s: status %d, want a 4xx", what, r.status)
		}
		if len(r.raw) > 4<<10 {
			t.Fatalf("%s: %d-byte answer echoes the input: %.200s", what, len(r.raw), r.raw)
		}
	}
	// In the path the name is above the header limit.
	check("GET catalog", a.do(http.MethodGet, apiPrefix+"/catalogs/"+long, nil))
	check("GET table", a.do(http.MethodGet, apiPrefix+"/tables/unity.default."+long, nil))
	check("GET delta table", a.do(http.MethodGet, tablePath("unity", "default", long), nil))
	// Below it, the lookups answer 404 and quote a prefix.
	mid := strings.Repeat("m", 512<<10)
	check("GET catalog", a.do(http.MethodGet, apiPrefix+"/catalogs/"+mid, nil))
	check("GET table", a.do(http.MethodGet, apiPrefix+"/tables/unity.default."+mid, nil))
	check("GET table in missing catalog", a.do(http.MethodGet, apiPrefix+"/tables/"+mid+".default.t", nil))
	check("GET delta table", a.do(http.MethodGet, tablePath("unity", "default", mid), nil))
	check("GET delta table in missing schema", a.do(http.MethodGet, tablePath("unity", mid, "t"), nil))
	// The state machine builds these messages: they are clipped whole,
	// keeping their start.
	r := a.do(http.MethodPost, stagingPath(mid, "default"), map[string]any{"name": "t"})
	check("POST staging table in a missing catalog", r)
	deltaErr(t, r, 404, "NoSuchCatalogException", "Catalog not found: mmmm", "…")

	check("POST schema", a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "s", "catalog_name": long}))
	check("POST table", a.do(http.MethodPost, apiPrefix+"/tables", map[string]any{"name": long, "catalog_name": "unity",
		"schema_name": "default", "table_type": "EXTERNAL", "data_source_format": "DELTA", "storage_location": "file:///tmp/x/" + long}))
	check("duplicate key", a.do(http.MethodPost, apiPrefix+"/catalogs", `{"`+long+`":1,"`+long+`":2}`))
}
