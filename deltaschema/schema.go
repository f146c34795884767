// Package deltaschema parses, validates and re-serialises the Delta struct
// type that the Unity Catalog Delta API uses for column schemas.
//
// Validation reproduces the path-qualified error messages of Unity Catalog
// 0.7.0 so that clients see the same 400 responses from raftcat as from the
// reference server. Parsed schemas can be written back in canonical
// kebab-case form (what the API echoes) and projected onto UC REST
// ColumnInfo rows.
package deltaschema

import "encoding/json"

// Struct is a validated Delta struct type. It is used both for a whole
// table schema and for nested struct columns.
type Struct struct {
	Fields []Field
}

// Field is one named member of a Struct.
type Field struct {
	Name     string
	Type     Type
	Nullable bool
	// Metadata is the field's metadata object in canonical form (compact,
	// object keys sorted, numbers verbatim), so equal schemas always
	// produce identical bytes when replicated.
	Metadata json.RawMessage
}

// Type is a Delta data type: one of *Primitive, *Decimal, *Array, *Map or
// *Struct. The unexported method keeps the set closed.
type Type interface {
	isType()
}

// Primitive is a non-parameterised Delta primitive such as "long".
type Primitive struct {
	Name string
}

// Decimal is a fixed-precision decimal type.
type Decimal struct {
	Precision int
	Scale     int
}

// Array is a Delta array type.
type Array struct {
	ElementType  Type
	ContainsNull bool
}

// Map is a Delta map type.
type Map struct {
	KeyType           Type
	ValueType         Type
	ValueContainsNull bool
}

func (*Primitive) isType() {}
func (*Decimal) isType()   {}
func (*Array) isType()     {}
func (*Map) isType()       {}
func (*Struct) isType()    {}

// primitiveTypeNames maps the closed set of Delta protocol primitives to
// their UC ColumnTypeName. Anything else is rejected on the UC wire.
var primitiveTypeNames = map[string]string{
	"boolean":       "BOOLEAN",
	"byte":          "BYTE",
	"short":         "SHORT",
	"integer":       "INT",
	"long":          "LONG",
	"float":         "FLOAT",
	"double":        "DOUBLE",
	"date":          "DATE",
	"timestamp":     "TIMESTAMP",
	"timestamp_ntz": "TIMESTAMP_NTZ",
	"string":        "STRING",
	"binary":        "BINARY",
	"variant":       "VARIANT",
}

// Empty returns the canonical JSON of a struct with no fields, used where a
// table has no known schema.
func Empty() json.RawMessage {
	return json.RawMessage(`{"type":"struct","fields":[]}`)
}

// TopLevelNames returns the top-level field names in order.
func (s *Struct) TopLevelNames() []string {
	if s == nil {
		return nil
	}
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return names
}
