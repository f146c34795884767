package jsonlimit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestCheckDepth(t *testing.T) {
	cases := []struct {
		doc  string
		ok   bool
		name string
	}{
		{nested(3), true, "at the limit"},
		{nested(4), false, "one past the limit"},
		{`{"a":{"b":{"c":1}}}`, true, "objects at the limit"},
		{`{"a":{"b":{"c":{}}}}`, false, "objects past the limit"},
		{`["[[[[[[[[", "\"[[[[", {"k]]]]": 1}]`, true, "brackets inside strings do not count"},
		{`[[["\\"]]]`, true, "an escaped backslash ends before the quote"},
		{`[[], [], [[]]]`, true, "siblings do not add up"},
	}
	for _, c := range cases {
		err := CheckDepth([]byte(c.doc), 3)
		var de *DepthError
		if c.ok != (err == nil) || (err != nil && !errors.As(err, &de)) {
			t.Errorf("%s: CheckDepth(%s) = %v", c.name, c.doc, err)
		}
	}
}

// The limit leaves room for a document accepted here to be embedded a few
// levels deep in a raft log entry and still decode with encoding/json.
func TestMaxDepthFitsTheLogDecoder(t *testing.T) {
	doc := nested(MaxDepth + Slack)
	if err := CheckDepth([]byte(doc), MaxDepth+Slack); err != nil {
		t.Fatal(err)
	}
	entry := `{"a":{"b":{"c":[{"d":` + doc + `}]}}}`
	var v any
	if err := json.Unmarshal([]byte(entry), &v); err != nil {
		t.Fatalf("encoding/json refuses a document at the limit embedded in an entry: %v", err)
	}
	if err := Check([]byte(nested(MaxDepth + 1))); err == nil {
		t.Fatal("a document past the limit passed")
	}
}

func FuzzCheckDepth(f *testing.F) {
	f.Add([]byte(nested(5)), 4)
	f.Add([]byte(`{"a":"[\"{"}`), 1)
	f.Fuzz(func(t *testing.T, b []byte, limit int) {
		if limit < 0 || limit > 20000 {
			return
		}
		err := CheckDepth(b, limit)
		var v any
		if json.Unmarshal(b, &v) == nil && err == nil && jsonDepth(v) > limit {
			t.Fatalf("valid document of depth %d passed limit %d", jsonDepth(v), limit)
		}
	})
}

func jsonDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	case map[string]any:
		for _, e := range x {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	}
	return 0
}
