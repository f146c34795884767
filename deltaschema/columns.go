package deltaschema

import (
	"encoding/json"
	"strings"
)

// ColumnInfo is a column as returned by the UC REST API. Its fields are
// derived the way UC derives them for Spark-created tables, so tables
// created through the Delta API look identical to other clients.
type ColumnInfo struct {
	Name           string `json:"name"`
	TypeText       string `json:"type_text"`
	TypeJSON       string `json:"type_json"`
	TypeName       string `json:"type_name"`
	TypePrecision  int    `json:"type_precision"`
	TypeScale      int    `json:"type_scale"`
	Position       int    `json:"position"`
	Comment        string `json:"comment,omitempty"`
	Nullable       bool   `json:"nullable"`
	PartitionIndex *int   `json:"partition_index,omitempty"`
}

// ColumnInfos converts the top-level fields of s to UC REST columns.
// partitionCols are top-level column names, matched case-insensitively;
// a column's partition_index is its position in partitionCols. Names that
// match no column are ignored (callers validate them), and for repeated
// names the first occurrence wins.
func (s *Struct) ColumnInfos(partitionCols []string) []ColumnInfo {
	if s == nil {
		return nil
	}
	partIndex := make(map[string]int, len(partitionCols))
	for i, name := range partitionCols {
		lower := strings.ToLower(name)
		if _, dup := partIndex[lower]; !dup {
			partIndex[lower] = i
		}
	}
	cols := make([]ColumnInfo, len(s.Fields))
	for i := range s.Fields {
		f := &s.Fields[i]
		c := ColumnInfo{
			Name:     f.Name,
			TypeText: typeText(f.Type),
			TypeJSON: fieldJSON(f),
			TypeName: typeName(f.Type),
			Position: i,
			Comment:  comment(f.Metadata),
			Nullable: f.Nullable,
		}
		if d, ok := f.Type.(*Decimal); ok {
			c.TypePrecision, c.TypeScale = d.Precision, d.Scale
		}
		if idx, ok := partIndex[strings.ToLower(f.Name)]; ok {
			c.PartitionIndex = &idx
		}
		cols[i] = c
	}
	return cols
}

// sqlPrimitiveNames holds the primitives whose Spark catalog string differs
// from their Delta name.
var sqlPrimitiveNames = map[string]string{
	"integer": "int",
	"byte":    "tinyint",
	"short":   "smallint",
	"long":    "bigint",
}

// typeText renders t as Spark's catalogString, which UC stores as
// type_text.
func typeText(t Type) string {
	switch t := t.(type) {
	case *Primitive:
		if sql, ok := sqlPrimitiveNames[t.Name]; ok {
			return sql
		}
		return t.Name
	case *Decimal:
		return decimalString(t)
	case *Array:
		return "array<" + typeText(t.ElementType) + ">"
	case *Map:
		return "map<" + typeText(t.KeyType) + "," + typeText(t.ValueType) + ">"
	case *Struct:
		var b strings.Builder
		b.WriteString("struct<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.Name)
			b.WriteByte(':')
			b.WriteString(typeText(f.Type))
		}
		b.WriteByte('>')
		return b.String()
	default:
		return ""
	}
}

// typeName returns the UC ColumnTypeName of t. Primitives outside the
// Delta protocol set (only possible via ParseSchemaString) are upper-cased.
func typeName(t Type) string {
	switch t := t.(type) {
	case *Primitive:
		if n, ok := primitiveTypeNames[t.Name]; ok {
			return n
		}
		return strings.ToUpper(t.Name)
	case *Decimal:
		return "DECIMAL"
	case *Array:
		return "ARRAY"
	case *Map:
		return "MAP"
	case *Struct:
		return "STRUCT"
	default:
		return ""
	}
}

// comment returns metadata["comment"] when it is a JSON string, which is
// where Spark keeps column comments.
func comment(metadata json.RawMessage) string {
	var m map[string]json.RawMessage
	if isNull(metadata) || json.Unmarshal(metadata, &m) != nil {
		return ""
	}
	var c string
	if firstByte(m["comment"]) != '"' || json.Unmarshal(m["comment"], &c) != nil {
		return ""
	}
	return c
}

// Comment is the field's comment (metadata.comment), "" when it has none.
func (f *Field) Comment() string { return comment(f.Metadata) }
