package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/storage"
)

// BindJSON decodes the request body into v; every protocol's bodies go
// through it. An empty body or `null` yields found=false. A body sent as
// anything but JSON is a 415 (see bodyMediaTypeOK); invalid UTF-8, a key
// given twice in one object, and malformed JSON or a wrong type are 400s
// naming the offset, key or field (see checkBody).
func BindJSON(c echo.Context, v any) (found bool, err error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return false, bodyReadError(err)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return false, nil
	}
	if ct := c.Request().Header.Get(echo.HeaderContentType); !bodyMediaTypeOK(ct) {
		return false, unsupportedMediaType(ct)
	}
	if err := checkBody(body); err != nil {
		return false, err
	}
	if err := gojson.Unmarshal(body, v); err != nil {
		return false, JSONError(err)
	}
	return true, nil
}

// bodyReadError is the answer for a body that could not be read, the same
// on the leader and on a follower: too large (413), not all there within
// the read timeout (408), or malformed (400).
func bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return echo.NewHTTPError(http.StatusRequestTimeout, "The request body did not arrive within the server's read timeout.")
	}
	return Invalid("Could not read request body: %v", err)
}

// JSONError is the 400 for a JSON decoding error, naming the offending
// field or offset.
func JSONError(err error) error {
	var te *gojson.UnmarshalTypeError
	var se *gojson.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "request body"
		}
		return Invalid("Invalid JSON: field '%s' must be of type %s, got %s.", field, jsonTypeName(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return Invalid("Malformed JSON request body at offset %d: %v", se.Offset, err)
	}
	return Invalid("Malformed JSON request body: %v", err)
}

func jsonTypeName(kind string) string {
	switch kind {
	case "map", "struct":
		return "object"
	case "slice":
		return "array"
	case "int", "int64", "int32", "uint64", "float64":
		return "number"
	case "bool":
		return "boolean"
	}
	return kind
}

// CheckName validates a catalog, schema or table name as Unity Catalog
// does: letters, digits, '_', '@' and '-' only, at most 255 characters.
func CheckName(name string) error {
	if len(name) > 255 {
		return Invalid("Name cannot be longer than 255 characters")
	}
	for _, r := range name {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '@' || r == '-')
		if !ok {
			return Invalid("Name cannot contain a period, space, forward-slash, or control characters")
		}
	}
	return nil
}

// unescapeParams decodes percent-encoded path parameters (clients encode
// '@' as %40), so handlers always see names as they were created.
func unescapeParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		vals := c.ParamValues()
		for i, v := range vals {
			u, err := url.PathUnescape(v)
			if err != nil {
				return Invalid("Invalid path parameter %q: %v", Clip(v), err)
			}
			vals[i] = u
		}
		c.SetParamValues(vals...)
		return next(c)
	}
}

// RequiredName checks a required name field.
func RequiredName(name *string, what string) (string, error) {
	if name == nil || strings.TrimSpace(*name) == "" {
		return "", Invalid("%s is required.", what)
	}
	return *name, CheckName(*name)
}

// stamp is the non-deterministic part every command carries, decided here
// on the leader before proposing (see Write).
func stamp(c echo.Context) fsm.Stamp {
	return fsm.Stamp{Time: time.Now().UnixMilli(), Caller: caller(c)}
}

// caller is the authenticated principal, the one place a request's caller
// is known. Catalog users are not authenticated yet, so their requests
// are anonymous; a protocol that authenticates its own callers (Delta
// Sharing's recipients) names them with SetCaller.
func caller(c echo.Context) string {
	p, _ := c.Get(callerKey).(string)
	return p
}

const callerKey = "raftcat.caller"

// SetCaller records the principal a protocol authenticated the request
// as; Caller and every command's stamp then name it.
func SetCaller(c echo.Context, principal string) { c.Set(callerKey, principal) }

// Caller is the principal the request was authenticated as ("" when
// anonymous).
func Caller(c echo.Context) string { return caller(c) }

// BoolParam reads a boolean query parameter: false when absent, bare when
// given without a value (?name), else true or false as written.
func BoolParam(c echo.Context, name string, bare bool) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return bare && c.QueryParams().Has(name), nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, Invalid("%s must be true or false, got %q", name, Clip(v))
	}
	return b, nil
}

// CheckExternalLocation keeps external tables out of bucket roots and
// managed storage.
func CheckExternalLocation(loc string) error {
	if storage.IsRoot(loc) {
		return Invalid("External table storage location must include a non-empty path prefix: %s", Clip(loc))
	}
	if strings.Contains(loc, "__unitystorage") {
		return Invalid("Input path '%s' contains managed storage prefix __unitystorage.", Clip(loc))
	}
	return nil
}

// bodyRecorder remembers the first error reading a request body met, so
// that the request is answered for it (bodyReadError) whoever read the
// body and whatever they made of the error: a handler, the leader's
// restore, or the transport forwarding the body to the leader.
type bodyRecorder struct {
	io.ReadCloser
	err error
}

func (b *bodyRecorder) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// recordBody wraps the request body in a bodyRecorder.
func recordBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &bodyRecorder{ReadCloser: r.Body}
		}
		return next(c)
	}
}

// bodyFailure is the error reading the request's body met, if any. (A
// handler that replaces the body does so after reading it whole.)
func bodyFailure(c echo.Context) error {
	if rec, ok := c.Request().Body.(*bodyRecorder); ok && rec.err != nil {
		return bodyReadError(rec.err)
	}
	return nil
}
