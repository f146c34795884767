package deltaschema

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Canonical returns the canonical UC wire (kebab-case) JSON of s: every
// object type carries its "type" discriminator, decimals use the string
// form "decimal(p,s)", field members are ordered name, type, nullable,
// metadata, and metadata objects have sorted keys. A nil s yields Empty().
func (s *Struct) Canonical() json.RawMessage {
	if s == nil {
		return Empty()
	}
	var b bytes.Buffer
	writeStruct(&b, s, kebabKeys)
	return b.Bytes()
}

// fieldJSON returns the Spark StructField JSON (camelCase, as in a Delta
// log's schemaString) of f, which UC stores as a column's type_json.
func fieldJSON(f *Field) string {
	var b bytes.Buffer
	writeField(&b, f, camelKeys)
	return b.String()
}

func writeStruct(b *bytes.Buffer, s *Struct, k keyNames) {
	b.WriteString(`{"type":"struct","fields":[`)
	for i := range s.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		writeField(b, &s.Fields[i], k)
	}
	b.WriteString("]}")
}

func writeField(b *bytes.Buffer, f *Field, k keyNames) {
	b.WriteString(`{"name":`)
	writeString(b, f.Name)
	b.WriteString(`,"type":`)
	writeType(b, f.Type, k)
	b.WriteString(`,"nullable":`)
	b.WriteString(strconv.FormatBool(f.Nullable))
	b.WriteString(`,"metadata":`)
	b.Write(metadataJSON(f.Metadata))
	b.WriteByte('}')
}

func writeType(b *bytes.Buffer, t Type, k keyNames) {
	switch t := t.(type) {
	case *Primitive:
		writeString(b, t.Name)
	case *Decimal:
		writeString(b, decimalString(t))
	case *Array:
		b.WriteString(`{"type":"array",`)
		writeKey(b, k.elementType)
		writeType(b, t.ElementType, k)
		b.WriteByte(',')
		writeKey(b, k.containsNull)
		b.WriteString(strconv.FormatBool(t.ContainsNull))
		b.WriteByte('}')
	case *Map:
		b.WriteString(`{"type":"map",`)
		writeKey(b, k.keyType)
		writeType(b, t.KeyType, k)
		b.WriteByte(',')
		writeKey(b, k.valueType)
		writeType(b, t.ValueType, k)
		b.WriteByte(',')
		writeKey(b, k.valueContainsNull)
		b.WriteString(strconv.FormatBool(t.ValueContainsNull))
		b.WriteByte('}')
	case *Struct:
		writeStruct(b, t, k)
	default:
		// Only reachable for a hand-built Struct with a nil Type.
		b.WriteString("null")
	}
}

func decimalString(d *Decimal) string {
	return "decimal(" + strconv.Itoa(d.Precision) + "," + strconv.Itoa(d.Scale) + ")"
}

func writeKey(b *bytes.Buffer, key string) {
	writeString(b, key)
	b.WriteByte(':')
}

// writeString writes s as a JSON string without HTML escaping, so names
// such as "a<b" stay readable and match other JSON producers.
func writeString(b *bytes.Buffer, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

// metadataJSON returns canonical metadata, tolerating hand-built fields
// whose Metadata is unset or not yet canonical.
func metadataJSON(m json.RawMessage) []byte {
	if isNull(m) {
		return []byte("{}")
	}
	c, err := canonicalJSON(m)
	if err != nil {
		return []byte("{}")
	}
	return c
}

// canonicalJSON re-encodes raw compactly with sorted object keys. Numbers
// are kept as written (json.Number) so large integers survive unchanged.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
