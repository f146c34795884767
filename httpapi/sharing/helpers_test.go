package sharing_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/goldentables"
	"github.com/raftcat/raftcat/internal/parquettest"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const (
	uc       = "/api/2.1/unity-catalog"
	pyAgent  = "Delta-Sharing-Python/1.4.2 pandas/2.2.3 PyArrow/18.1.0 Python/3.12.8 System/Linux-6.8.0-x86_64"
	pyDetect = "responseformat=delta,parquet;readerfeatures=deletionvectors,columnmapping,timestampntz"
)

func goldenDir(t testing.TB) string { return goldentables.Dir(t) }

// copyTable copies a golden table into a fresh directory and returns its
// file:// location.
func copyTable(t testing.TB, name string) string { return goldentables.URL(goldentables.Copy(t, name)) }

// ok sends a request and fails unless it answers want.
func ok(t testing.TB, want int, method, u string, body any, headers ...string) testcluster.Response {
	t.Helper()
	r := testcluster.Do(t, method, u, body, headers...)
	if r.Status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, u, r.Status, want, r.Raw)
	}
	return r
}

// provider drives the management API of one node, sending headers
// (its credential, when the cluster needs one) with every request.
type provider struct {
	t       testing.TB
	url     string
	headers []string
}

// ok sends a request to UC REST below path and fails unless it answers
// 200.
func (p provider) ok(method, path string, body any) testcluster.Response {
	p.t.Helper()
	return ok(p.t, 200, method, p.url+uc+path, body, p.headers...)
}

func (p provider) registerExternal(schema, name, location string) {
	p.t.Helper()
	p.ok(http.MethodPost, "/tables", map[string]any{"name": name, "catalog_name": "unity",
		"schema_name": schema, "table_type": "EXTERNAL", "data_source_format": "DELTA", "storage_location": location})
}

func (p provider) schema(name string) {
	p.t.Helper()
	p.ok(http.MethodPost, "/schemas", map[string]any{"name": name, "catalog_name": "unity"})
}

func (p provider) share(name string) {
	p.t.Helper()
	p.ok(http.MethodPost, "/shares", map[string]any{"name": name})
}

// add shares a table, with its history when history is true.
func (p provider) add(share, table, sharedAs string, history bool) {
	p.t.Helper()
	status := "DISABLED"
	if history {
		status = "ENABLED"
	}
	p.ok(http.MethodPatch, "/shares/"+share, map[string]any{"updates": []any{map[string]any{
		"action": "ADD", "data_object": map[string]any{"name": table, "data_object_type": "TABLE",
			"shared_as": sharedAs, "history_data_sharing_status": status}}}})
}

func (p provider) grant(share, recipient string) {
	p.t.Helper()
	p.ok(http.MethodPatch, "/shares/"+share+"/permissions", map[string]any{"changes": []any{
		map[string]any{"principal": recipient, "add": []string{"SELECT"}}}})
}

func (p provider) revoke(share, recipient string) {
	p.t.Helper()
	p.ok(http.MethodPatch, "/shares/"+share+"/permissions", map[string]any{"changes": []any{
		map[string]any{"principal": recipient, "remove": []string{"SELECT"}}}})
}

// recipient creates a recipient and downloads its profile.
func (p provider) recipient(name string) profile {
	p.t.Helper()
	r := p.ok(http.MethodPost, "/recipients", map[string]any{"name": name, "authentication_type": "TOKEN"})
	return download(p.t, activationURL(p.t, r))
}

// activationURL is the activation URL of the newest token of a
// recipient answer.
func activationURL(t testing.TB, r testcluster.Response) string {
	t.Helper()
	toks, _ := r.Body["tokens"].([]any)
	for i := len(toks) - 1; i >= 0; i-- {
		if u, _ := toks[i].(map[string]any)["activation_url"].(string); u != "" {
			return u
		}
	}
	t.Fatalf("no activation_url in %s", r.Raw)
	return ""
}

type profile struct {
	ShareCredentialsVersion int    `json:"shareCredentialsVersion"`
	Endpoint                string `json:"endpoint"`
	BearerToken             string `json:"bearerToken"`
	ExpirationTime          string `json:"expirationTime"`
}

func download(t testing.TB, u string) profile {
	t.Helper()
	r := ok(t, 200, http.MethodGet, u, nil)
	var p profile
	if err := json.Unmarshal(r.Raw, &p); err != nil || p.BearerToken == "" || p.ShareCredentialsVersion != 1 {
		t.Fatalf("not a profile: %s", r.Raw)
	}
	return p
}

// client replays the reference Python client's requests with a profile.
type client struct {
	t       testing.TB
	p       profile
	caps    string
	headers []string
}

func (p profile) client(t testing.TB) *client { return &client{t: t, p: p} }

func (c *client) get(path string) testcluster.Response {
	return testcluster.Do(c.t, http.MethodGet, c.p.Endpoint+path, nil, c.auth()...)
}

func (c *client) auth() []string {
	h := []string{"Authorization", "Bearer " + c.p.BearerToken, "User-Agent", pyAgent}
	if c.caps != "" {
		h = append(h, "delta-sharing-capabilities", c.caps)
	}
	return append(h, c.headers...)
}

// answer is an NDJSON answer: status, headers and one decoded object a
// line.
type answer struct {
	status int
	header http.Header
	lines  []map[string]json.RawMessage
	raw    string
}

func (c *client) ndjson(method, path string, body any) answer {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.p.Endpoint+path, rd)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	h := c.auth()
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var line map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil || len(line) != 1 {
				c.t.Fatalf("line %q is not one JSON object with one key", sc.Text())
			}
			a.lines = append(a.lines, line)
		}
	}
	return a
}

func (c *client) query(path string, body any) answer {
	c.t.Helper()
	return c.ndjson(http.MethodPost, path+"/query", body)
}

// mustOK fails unless the answer is a 200.
func (a answer) mustOK(t testing.TB) answer {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.raw)
	}
	return a
}

// kinds lists each line's key.
func (a answer) kinds() []string {
	var out []string
	for _, l := range a.lines {
		for k := range l {
			out = append(out, k)
		}
	}
	return out
}

// of decodes the lines of one kind.
func (a answer) of(kind string) []map[string]any {
	var out []map[string]any
	for _, l := range a.lines {
		if raw, ok := l[kind]; ok {
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			out = append(out, m)
		}
	}
	return out
}

// fetch GETs a file URL without credentials, as clients do.
func fetch(t testing.TB, u string, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatalf("bad file URL %q: %v", u, err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// fileRows counts a file line's rows: its stats, else the Parquet footer
// of the file read through its URL; minus its deletion vector's rows.
func fileRows(t testing.TB, url, stats string, dvCardinality int64) int64 {
	t.Helper()
	var st struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if stats != "" && json.Unmarshal([]byte(stats), &st) == nil && st.NumRecords != nil {
		return *st.NumRecords - dvCardinality
	}
	status, raw := fetch(t, url)
	if status != 200 {
		t.Fatalf("file %s: status %d: %s", url, status, raw)
	}
	n, err := parquettest.Rows(raw)
	if err != nil {
		t.Fatalf("file %s: %v", url, err)
	}
	return n - dvCardinality
}

// rows sums the rows of a snapshot answer in either format.
func (a answer) rows(t testing.TB) int64 {
	t.Helper()
	var n int64
	for _, f := range a.of("file") {
		if dsa, ok := f["deltaSingleAction"].(map[string]any); ok {
			add := dsa["add"].(map[string]any)
			var card int64
			if dv, ok := add["deletionVector"].(map[string]any); ok {
				card = int64(dv["cardinality"].(float64))
			}
			stats, _ := add["stats"].(string)
			n += fileRows(t, add["path"].(string), stats, card)
			continue
		}
		stats, _ := f["stats"].(string)
		n += fileRows(t, f["url"].(string), stats, 0)
	}
	return n
}

func tablePath(share, schema, table string) string {
	return fmt.Sprintf("/shares/%s/schemas/%s/tables/%s", share, schema, table)
}
