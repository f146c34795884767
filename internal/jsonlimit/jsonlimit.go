// Package jsonlimit holds the nesting limit every JSON document a request
// carries must respect, and the check for it. The same limit applies to a
// request body and to JSON carried inside its string fields (a column's
// type_json, a schema string), so that whatever a request decoder accepts
// stays well inside what the raft log's decoder (encoding/json, 10000
// levels) accepts once it is embedded in a command.
package jsonlimit

import "fmt"

// MaxDepth is the deepest nesting of arrays and objects accepted in one
// JSON document. Unity Catalog's reference server (Jackson) has the same
// default.
const MaxDepth = 1000

// Slack is the extra nesting a server may add when it assembles documents
// that each respected MaxDepth into one (UC REST's columns become one
// struct type). Internal checks allow MaxDepth+Slack; clients see MaxDepth.
const Slack = 16

// DepthError reports a document nested deeper than the limit.
type DepthError struct{ Limit int }

func (e *DepthError) Error() string {
	return fmt.Sprintf("JSON nests deeper than %d levels", e.Limit)
}

// CheckDepth fails if b, taken as JSON, opens more than limit arrays or
// objects at once. It does not validate the document otherwise: brackets
// inside strings are skipped, and malformed input is left to the decoder.
func CheckDepth(b []byte, limit int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			inString, escaped = stringStep(c, escaped)
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return &DepthError{Limit: limit}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// stringStep advances through one byte of a JSON string, returning whether
// the string continues and whether the next byte is escaped.
func stringStep(c byte, escaped bool) (inString, nextEscaped bool) {
	switch {
	case escaped:
		return true, false
	case c == '\\':
		return true, true
	case c == '"':
		return false, false
	}
	return true, false
}

// Check applies MaxDepth.
func Check(b []byte) error { return CheckDepth(b, MaxDepth) }
