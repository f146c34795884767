package sharing_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/sharing"
	"github.com/raftcat/raftcat/httpapi/ucrest"
	"github.com/raftcat/raftcat/internal/fakecluster"
	"github.com/raftcat/raftcat/storage"
)

// fuzzLake serves UC REST and Delta Sharing on the fake data path, with
// the golden CDF table shared (history on) to a recipient.
type fuzzLake struct {
	node  *fakecluster.Node
	h     http.Handler
	token string
}

func newFuzzLake(f *testing.F) *fuzzLake {
	node := fakecluster.New("node1", "file://"+f.TempDir()+"/warehouse")
	core := httpapi.New(node, httpapi.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	objects := storage.NewBlobs(storage.BlobOptions{})
	f.Cleanup(func() { objects.Close() })
	ucrest.Register(core)
	sharing.Register(core, sharing.Config{Objects: objects})
	srv := httptest.NewServer(core.Handler())
	defer srv.Close()
	p := provider{t: f, url: srv.URL}
	p.registerExternal("default", "cdf", copyTable(f, "cdf-table"))
	p.share("fz")
	p.add("fz", "unity.default.cdf", "default.cdf", true)
	prof := p.recipient("fuzzer")
	p.grant("fz", "fuzzer")
	return &fuzzLake{node: node, h: core.Handler(), token: prof.BearerToken}
}

// check sends one request as the recipient: never a 5xx, and a refusal
// leaves the state as it was.
func (l *fuzzLake) check(t *testing.T, method, target string, body []byte, caps string) {
	before, _ := l.node.StaleState()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("delta-sharing-capabilities", caps)
	rec := httptest.NewRecorder()
	l.h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, rec.Body.String())
	}
	if after, _ := l.node.StaleState(); rec.Code >= 400 && after.Digest() != before.Digest() {
		t.Fatalf("%s %s %q: refused with %d but the state changed", method, target, body, rec.Code)
	}
}

const fuzzTable = "/delta-sharing/shares/fz/schemas/default/tables/cdf"

// FuzzSharingQuery sends arbitrary query bodies and capabilities.
func FuzzSharingQuery(f *testing.F) {
	for _, b := range []string{`{}`, `{"version":1}`, `{"version":"2"}`, `{"timestamp":"2024-01-01T00:00:00Z"}`,
		`{"startingVersion":0,"endingVersion":2,"maxFiles":2}`, `{"jsonPredicateHints":"{\"op\":\"isNull\",\"children\":[{\"op\":\"column\",\"name\":\"birthday\",\"valueType\":\"date\"}]}"}`,
		`{"limitHint":1,"maxFiles":1}`, `{"includeRefreshToken":true}`, `{"pageToken":"e30.x"}`, `{"predicateHints":[]}`,
		`{"predicateHints":["birthday = DATE '2023-12-22' OR (id IN (1, 2) AND NOT birthday BETWEEN '2023-01-01' AND '2023-12-31')", "(("]}`, `[1]`, `{"maxFiles":-1}`} {
		f.Add([]byte(b), "responseformat=delta,parquet;readerfeatures=deletionvectors")
		f.Add([]byte(b), "")
	}
	l := newFuzzLake(f)
	f.Fuzz(func(t *testing.T, body []byte, caps string) {
		l.check(t, http.MethodPost, fuzzTable+"/query", body, caps)
	})
}

// FuzzSharingChanges sends arbitrary change-feed and version parameters.
func FuzzSharingChanges(f *testing.F) {
	for _, q := range []string{"startingVersion=0", "startingVersion=1&endingVersion=3&includeHistoricalMetadata=True",
		"startingTimestamp=2000-01-01T00:00:00Z&maxFiles=2", "startingVersion=0&pageToken=e30.e30", "startingVersion=-1", "endingTimestamp=x"} {
		f.Add(q)
	}
	l := newFuzzLake(f)
	f.Fuzz(func(t *testing.T, query string) {
		vals, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		query = vals.Encode() // as a client sends it: escaped
		l.check(t, http.MethodGet, fuzzTable+"/changes?"+query, nil, "")
		l.check(t, http.MethodGet, fuzzTable+"/metadata?"+query, nil, "responseformat=delta")
		l.check(t, http.MethodGet, fuzzTable+"/version?"+query, nil, "")
	})
}
