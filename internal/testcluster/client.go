package testcluster

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
)

// Response is a decoded HTTP answer.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Index is the X-Raftcat-Index header as a number (0 if absent).
func (r Response) Index() uint64 {
	n, _ := strconv.ParseUint(r.Header.Get("X-Raftcat-Index"), 10, 64)
	return n
}

// Do sends a request with an optional JSON body (any value, or a string
// sent verbatim) and extra headers given as key, value pairs.
func Do(t testing.TB, method, url string, body any, headers ...string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &out.Body)
	}
	return out
}

// Text is the raw body as a string.
func (r Response) Text() string { return string(r.Raw) }
