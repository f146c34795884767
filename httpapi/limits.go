package httpapi

import (
	"fmt"
	"maps"
	"slices"

	"github.com/raftcat/raftcat/deltaschema"
)

// The size limits of the string fields the catalog stores, in bytes of
// UTF-8, on UC REST and the Delta API alike (docs/configuration.md,
// "Request limits"). Every value is replicated into every node's state
// and snapshot, so none may be as large as a request body. Names have
// Unity Catalog's own limit (CheckName); a Delta commit's file-name is
// capped at MaxFileNameBytes by the Delta API.
const (
	// MaxCommentBytes bounds a catalog's, schema's, table's or column's
	// comment.
	MaxCommentBytes = 64 << 10
	// MaxPropertyKeyBytes bounds a property's key.
	MaxPropertyKeyBytes = 1 << 10
	// MaxPropertyValueBytes bounds a property's value.
	MaxPropertyValueBytes = 16 << 10
	// MaxLocationBytes bounds a table location or storage root.
	MaxLocationBytes = 4 << 10
	// MaxColumnNameBytes bounds a column's name, at any depth, and a
	// clustering column's name.
	MaxColumnNameBytes = 1 << 10
	// MaxFileNameBytes bounds a file name (a Delta commit's file-name),
	// as local file systems and object stores' key parts do.
	MaxFileNameBytes = 255
)

// CheckSize refuses a value of field longer than limit bytes.
func CheckSize(field, value string, limit int) error {
	if len(value) > limit {
		return Invalid("%s is %d bytes long; at most %d bytes are allowed.", field, len(value), limit)
	}
	return nil
}

// CheckComment refuses a comment longer than MaxCommentBytes (nil is no
// comment).
func CheckComment(field string, comment *string) error {
	if comment == nil {
		return nil
	}
	return CheckSize(field, *comment, MaxCommentBytes)
}

// CheckProperties refuses a property key or value over its limit; member
// names the request member ("properties"), keys are checked in sorted
// order so the answer is the same every time.
func CheckProperties[V string | *string](member string, props map[string]V) error {
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if len(k) > MaxPropertyKeyBytes {
			return Invalid("A %s key ('%s') is %d bytes long; at most %d bytes are allowed.", member, Clip(k), len(k), MaxPropertyKeyBytes)
		}
		var v string
		switch x := any(props[k]).(type) {
		case string:
			v = x
		case *string:
			if x != nil {
				v = *x
			}
		}
		if err := CheckSize(fmt.Sprintf("%s['%s']", member, Clip(k)), v, MaxPropertyValueBytes); err != nil {
			return err
		}
	}
	return nil
}

// CheckColumns refuses a column, at any depth, whose name is longer than
// MaxColumnNameBytes or whose comment (metadata.comment) is longer than
// MaxCommentBytes. path names the struct in the request ("columns").
func CheckColumns(path string, st *deltaschema.Struct) error {
	if st == nil {
		return nil
	}
	for i, f := range st.Fields {
		if err := checkColumn(fmt.Sprintf("%s.fields[%d]", path, i), &f); err != nil {
			return err
		}
	}
	return nil
}

// CheckColumn is CheckColumns for one field; path names the field itself
// ("columns[0].type_json").
func CheckColumn(path string, f *deltaschema.Field) error { return checkColumn(path, f) }

func checkColumn(path string, f *deltaschema.Field) error {
	if err := CheckSize(path+".name", f.Name, MaxColumnNameBytes); err != nil {
		return err
	}
	if c := f.Comment(); c != "" {
		if err := CheckSize(path+".metadata.comment", c, MaxCommentBytes); err != nil {
			return err
		}
	}
	return checkNested(path+".type", f.Type)
}

func checkNested(path string, t deltaschema.Type) error {
	switch t := t.(type) {
	case *deltaschema.Struct:
		return CheckColumns(path, t)
	case *deltaschema.Array:
		return checkNested(path+".elementType", t.ElementType)
	case *deltaschema.Map:
		if err := checkNested(path+".keyType", t.KeyType); err != nil {
			return err
		}
		return checkNested(path+".valueType", t.ValueType)
	}
	return nil
}
