package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
)

// commitBody is a typical small write: a Delta commit of one version.
const commitBody = `{"requirements":[{"type":"assert-table-uuid","uuid":"0b2c9b7e-0000-4000-8000-000000000001"}],` +
	`"updates":[{"action":"add-commit","commit":{"version":7,"timestamp":1796154415609,` +
	`"file-name":"00000000000000000007.3c1a4d2e-5f6a-4b7c-8d9e-0f1a2b3c4d5e.json","file-size":1234,` +
	`"file-modification-timestamp":1796154415600}},{"action":"set-properties","updates":{"delta.lastCommitTimestamp":"1796154415609"}}]}`

type benchCommit struct {
	Requirements []map[string]any `json:"requirements"`
	Updates      []map[string]any `json:"updates"`
}

func bindOnce(tb testing.TB, e *echo.Echo, body []byte, contentType string, v any) error {
	req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set(echo.HeaderContentType, contentType)
	}
	_, err := BindJSON(e.NewContext(req, httptest.NewRecorder()), v)
	return err
}

// BenchmarkBindJSON measures binding a small commit body; "checks" is
// the body checks alone (media type, UTF-8, duplicate keys, depth), the
// cost they add to each write.
func BenchmarkBindJSON(b *testing.B) {
	e, body := echo.New(), []byte(commitBody)
	b.Run("bind", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v benchCommit
			if err := bindOnce(b, e, body, "application/json", &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !bodyMediaTypeOK("application/json; charset=utf-8") || checkBody(body) != nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v benchCommit
			if err := gojson.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// refDuplicate reports whether a valid JSON document has an object with a
// key twice, walking it with encoding/json's tokenizer.
func refDuplicate(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		object bool
		keys   map[string]bool
		key    bool // the next token is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &level{object: true, keys: map[string]bool{}, key: true})
			case '[':
				stack = append(stack, &level{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].key = true
				}
			}
			if top != nil && top.object && d != '}' && d != ']' {
				top.key = false
			}
			continue
		}
		if top != nil && top.object {
			if top.key {
				k := tok.(string)
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.key = false
			} else {
				top.key = true
			}
		}
	}
}

func TestCheckBodyFindsDuplicatesAsTheTokenizer(t *testing.T) {
	cases := map[string]bool{
		`{"a":1,"b":2}`:                          false,
		`{"a":1,"a":2}`:                          true,
		`{"a":{"a":1},"b":{"a":2}}`:              false,
		`{"a":[{"x":1,"x":2}]}`:                  true,
		`{"a\u0062":1,"ab":2}`:                   true,
		`{"k":"a,\"k\":","z":1}`:                 false,
		`[{"a":1},{"a":1}]`:                      false,
		`{"a":{"b":1},"a":2}`:                    true,
		`{"` + strings.Repeat("a,", 40) + `":1}`: false,
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = `"k` + strings.Repeat("x", i) + `":1`
	}
	cases["{"+strings.Join(many, ",")+"}"] = false
	cases["{"+strings.Join(many, ",")+`,"kxxxxx":2}`] = true
	for doc, want := range cases {
		if ref := refDuplicate([]byte(doc)); ref != want {
			t.Fatalf("reference says %v for %s", ref, doc)
		}
		if got := isDuplicateErr(checkBody([]byte(doc))); got != want {
			t.Errorf("checkBody(%s): duplicate %v, want %v", doc, got, want)
		}
	}
}

func isDuplicateErr(err error) bool {
	var fe *fsm.Error
	return errors.As(err, &fe) && strings.HasPrefix(fe.Message, "Duplicate key")
}

// FuzzBindJSON: whatever the body and its Content-Type, BindJSON does not
// panic and answers either success or a client error; on valid JSON its
// duplicate-key verdict is encoding/json tokenizer's.
func FuzzBindJSON(f *testing.F) {
	f.Add([]byte(commitBody), "application/json")
	f.Add([]byte(`{"name":"a","name":"b"}`), "")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		e := echo.New()
		var v struct {
			Name  *string           `json:"name"`
			Props map[string]string `json:"properties"`
			Any   any               `json:"any"`
			N     int64             `json:"n"`
		}
		err := bindOnce(t, e, body, contentType, &v)
		if err != nil {
			if p := classify(err); !(p.Code == fsm.CodeInvalid || p.Code == 0 && p.Status >= 400 && p.Status < 500) {
				t.Fatalf("BindJSON(%q, %q) = %v: not a client error (%+v)", body, contentType, err, p)
			}
		}
		trimmed := bytes.TrimSpace(body)
		cerr := checkBody(trimmed)
		if !json.Valid(trimmed) || cerr != nil && !isDuplicateErr(cerr) {
			return // not JSON, or refused for another reason (UTF-8, depth)
		}
		if ref := refDuplicate(trimmed); ref != isDuplicateErr(cerr) {
			t.Fatalf("checkBody(%q) duplicate=%v, tokenizer says %v", trimmed, isDuplicateErr(cerr), ref)
		}
	})
}
