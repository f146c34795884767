package httpapi

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/internal/jsonlimit"
)

// What a request body must be before it is decoded, checked in one pass
// over it (checkBody): JSON in UTF-8 (a decoder would silently replace
// invalid bytes and store the replacement characters), no object with one
// key twice (a decoder would keep the last one, so the client and the
// catalog could read one request differently), and no deeper nesting than
// jsonlimit.MaxDepth. Syntax is left to the decoder, which names the
// offending offset.

// bodyMediaTypeOK reports whether a request body of this Content-Type is
// taken as JSON: application/json and any +json type, or no Content-Type
// at all. application/x-www-form-urlencoded is taken as JSON too: it is
// what `curl -d` sends without -H, and the body must still parse as JSON.
func bodyMediaTypeOK(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	return mt == "" || strings.EqualFold(mt, echo.MIMEApplicationJSON) ||
		strings.EqualFold(mt, echo.MIMEApplicationForm) || hasSuffixFold(mt, "+json")
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// unsupportedMediaType is the 415 for a body that is not JSON.
func unsupportedMediaType(contentType string) error {
	return echo.NewHTTPError(415, "Unsupported Content-Type '"+Clip(contentType)+
		"': request bodies are JSON (Content-Type: application/json).")
}

// checkBody applies the checks above to a JSON request body.
func checkBody(b []byte) error {
	if !utf8.Valid(b) {
		at := invalidUTF8At(b)
		return Invalid("%s is not valid UTF-8 (at offset %d of the JSON request body).", fieldAt(b, at), at)
	}
	sc := scanners.Get().(*keyScanner)
	sc.body, sc.frames, sc.keys = b, sc.frames[:0], sc.keys[:0]
	err := sc.scan()
	clear(sc.keys[:cap(sc.keys)])
	sc.body = nil
	if cap(sc.frames) <= 64 && cap(sc.keys) <= 256 { // keep only small ones
		scanners.Put(sc)
	}
	return err
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// keyScanner walks a JSON document's structure: it tracks the open
// arrays and objects and the keys each open object has had so far.
type keyScanner struct {
	body   []byte
	frames []frame
	keys   [][]byte // keys of the open objects, frame by frame
}

// scanners are reused: checking a small body then allocates nothing.
var scanners = sync.Pool{New: func() any {
	return &keyScanner{frames: make([]frame, 0, 8), keys: make([][]byte, 0, 32)}
}}

// frame is one open array or object.
type frame struct {
	object  bool
	wantKey bool                // the next string is a key
	start   int                 // its first key in keys
	set     map[string]struct{} // its keys, once it has many
}

// manyKeys is the size from which an object's keys are looked up in a map
// rather than compared one by one.
const manyKeys = 32

func (sc *keyScanner) scan() error {
	for i := 0; i < len(sc.body); i++ {
		var err error
		switch sc.body[i] {
		case '{', '[':
			err = sc.open(sc.body[i] == '{')
		case '}', ']':
			sc.close()
		case ',':
			if n := len(sc.frames); n > 0 && sc.frames[n-1].object {
				sc.frames[n-1].wantKey = true
			}
		case '"':
			i, err = sc.str(i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (sc *keyScanner) open(object bool) error {
	if len(sc.frames) >= jsonlimit.MaxDepth {
		return Invalid("Malformed JSON request body: %v", &jsonlimit.DepthError{Limit: jsonlimit.MaxDepth})
	}
	sc.frames = append(sc.frames, frame{object: object, wantKey: object, start: len(sc.keys)})
	return nil
}

func (sc *keyScanner) close() {
	if n := len(sc.frames); n > 0 {
		sc.keys = sc.keys[:sc.frames[n-1].start]
		sc.frames = sc.frames[:n-1]
	}
}

// str reads the string starting at the quote at i and returns the index
// of its closing quote; a string in key position is checked against its
// object's other keys.
func (sc *keyScanner) str(i int) (end int, err error) {
	end, escaped, err := stringEnd(sc.body, i)
	if err != nil {
		return end, err
	}
	n := len(sc.frames)
	if n == 0 || !sc.frames[n-1].wantKey {
		return end, nil
	}
	sc.frames[n-1].wantKey = false
	key := sc.body[i+1 : min(end, len(sc.body))]
	if escaped {
		var s string
		if gojson.Unmarshal(sc.body[i:min(end+1, len(sc.body))], &s) != nil {
			return end, nil // malformed: the decoder says where
		}
		key = []byte(s)
	}
	return end, sc.addKey(&sc.frames[n-1], key)
}

func (sc *keyScanner) addKey(f *frame, key []byte) error {
	dup := func() error { return Invalid("Duplicate key '%s' in the JSON request body.", Clip(string(key))) }
	if f.set != nil {
		if _, ok := f.set[string(key)]; ok {
			return dup()
		}
		f.set[string(key)] = struct{}{}
		return nil
	}
	for _, k := range sc.keys[f.start:] {
		if bytes.Equal(k, key) {
			return dup()
		}
	}
	sc.keys = append(sc.keys, key)
	if len(sc.keys)-f.start >= manyKeys {
		f.set = make(map[string]struct{}, 2*manyKeys)
		for _, k := range sc.keys[f.start:] {
			f.set[string(k)] = struct{}{}
		}
	}
	return nil
}

// stringEnd returns the index of the quote closing the string that opens
// at i (len(b) if it does not close) and whether it has escapes. An
// escaped lone UTF-16 surrogate ("\ud800") is refused: decoders replace
// it as they do invalid UTF-8.
func stringEnd(b []byte, i int) (end int, escaped bool, err error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j, escaped, nil
		case '\\':
			escaped = true
			skip, ok := unicodeEscape(b, j)
			if !ok {
				return j, true, Invalid("The JSON request body has an unpaired UTF-16 surrogate escape at offset %d.", j)
			}
			j += skip
		}
	}
	return len(b), escaped, nil
}

// unicodeEscape checks the escape at b[j] (a backslash) and returns how
// many bytes after the backslash it spans: a high surrogate must be
// followed by a low one, and a low one must follow a high one. Escapes
// other than \uXXXX span one byte (malformed ones are the decoder's to
// report).
func unicodeEscape(b []byte, j int) (skip int, ok bool) {
	if j+1 >= len(b) || b[j+1] != 'u' {
		return 1, true
	}
	r, ok := hex4(b, j+2)
	switch {
	case !ok:
		return 1, true
	case r < 0xD800 || r > 0xDFFF:
		return 5, true
	case r >= 0xDC00:
		return 0, false // a low surrogate alone
	}
	if j+7 < len(b) && b[j+6] == '\\' && b[j+7] == 'u' {
		if lo, ok := hex4(b, j+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			return 11, true
		}
	}
	return 0, false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// fieldAt names the member of the JSON document b that holds offset at:
// "Field 'columns[1].name'", "A key in 'properties'", or "The JSON
// request body" when at lies outside any string. Keys are quoted as
// written, clipped, with invalid bytes replaced.
func fieldAt(b []byte, at int) string {
	var path []string // one entry per open array or object: its current key or index
	var arrays []bool
	var idx []int
	wantKey := false
	for i := 0; i < len(b) && i <= at; i++ {
		switch b[i] {
		case '{', '[':
			arrays = append(arrays, b[i] == '[')
			idx = append(idx, 0)
			path = append(path, "")
			wantKey = b[i] == '{'
			if b[i] == '[' {
				path[len(path)-1] = "[0]"
			}
		case '}', ']':
			if n := len(path); n > 0 {
				path, arrays, idx = path[:n-1], arrays[:n-1], idx[:n-1]
			}
		case ',':
			if n := len(path); n > 0 {
				idx[n-1]++
				wantKey = !arrays[n-1]
				if arrays[n-1] {
					path[n-1] = "[" + strconv.Itoa(idx[n-1]) + "]"
				}
			}
		case '"':
			end, _, _ := stringEnd(b, i)
			isKey := wantKey && len(path) > 0
			if at <= end {
				if isKey && len(path) == 1 {
					return "A key of the JSON request body"
				}
				if isKey {
					return "A key in '" + joinPath(path[:len(path)-1]) + "'"
				}
				return "Field '" + joinPath(path) + "'"
			}
			if isKey {
				path[len(path)-1] = "." + strings.ToValidUTF8(Clip(string(b[i+1:end])), "\ufffd")
				wantKey = false
			}
			i = end
		}
	}
	return "The JSON request body"
}

func joinPath(path []string) string {
	return strings.TrimPrefix(strings.Join(path, ""), ".")
}
