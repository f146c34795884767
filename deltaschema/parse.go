package deltaschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/raftcat/raftcat/internal/jsonlimit"
)

// Parsing runs in two passes, mirroring the reference server, which first
// deserialises the whole request and only then validates it:
//
//  1. decode turns JSON into a raw tree where absent and null members are
//     nil. It fails only on JSON shape problems ("Cannot construct instance
//     of ...") or an unknown object type discriminator.
//  2. validate walks the raw tree in document order and reports the first
//     missing or out-of-range member.
//
// Hence a shape error anywhere in the document wins over a validation error
// earlier in it. Within a field, validation checks name, then the presence
// of type, nullable and metadata, and only then descends into the type;
// within arrays and maps, presence of all members is checked before
// descending. The duplicate-name check for a field runs after the field
// itself (including its type) validated, so its message names the second
// occurrence.

// keyNames holds the member names of nested types, which differ between
// the UC wire (kebab-case) and the Delta log (camelCase).
type keyNames struct {
	elementType, containsNull, keyType, valueType, valueContainsNull string
}

var (
	kebabKeys = keyNames{"element-type", "contains-null", "key-type", "value-type", "value-contains-null"}
	camelKeys = keyNames{"elementType", "containsNull", "keyType", "valueType", "valueContainsNull"}
)

// options selects between strict UC validation and the lenient reading of
// schemas found in existing Delta logs.
type options struct {
	keys keyNames
	// lenient accepts any primitive name, empty top-level structs and
	// duplicate names, and defaults missing nullability flags to true and
	// missing metadata to {}.
	lenient bool
}

var decimalPattern = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

// Parse validates raw, the UC wire (kebab-case) JSON of a Delta struct
// type, and returns the parsed struct. root names the request member for
// error paths, e.g. "columns". Every error is a client error whose message
// matches Unity Catalog's.
func Parse(root string, raw json.RawMessage) (*Struct, error) {
	return parse(root, raw, options{keys: kebabKeys})
}

// ParseSchemaString parses a Spark/Delta-log schema (the camelCase JSON in
// a Delta log's metaData.schemaString). It is lenient because the schema
// was already accepted by whatever wrote the table.
func ParseSchemaString(s string) (*Struct, error) {
	st, err := parse("schemaString", json.RawMessage(s), options{keys: camelKeys, lenient: true})
	if err != nil {
		return nil, fmt.Errorf("invalid Delta schemaString: %w", err)
	}
	return st, nil
}

func parse(root string, raw json.RawMessage, opt options) (*Struct, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, required(root)
	}
	if !json.Valid(raw) {
		return nil, cannotConstruct("DeltaStructType", root)
	}
	if err := jsonlimit.CheckDepth(raw, jsonlimit.MaxDepth+jsonlimit.Slack); err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	rs, err := decodeTopStruct(raw, root, opt)
	if err != nil {
		return nil, err
	}
	return validateStruct(rs, root, true, opt)
}

// ---- pass 1: decode ----

type rawStruct struct {
	fieldsSet bool
	fields    []*rawField // nil entries are JSON nulls
}

type rawField struct {
	name     *string
	typ      rawType
	nullable *bool
	metadata json.RawMessage // canonical; nil when absent or null
}

// rawType is one of rawPrimitive, *rawDecimal, *rawArray, *rawMap or
// *rawStruct; nil means absent or null.
type rawType any

type rawPrimitive string

type rawDecimal struct {
	precision, scale *int64
}

type rawArray struct {
	elementType  rawType
	containsNull *bool
}

type rawMap struct {
	keyType, valueType rawType
	valueContainsNull  *bool
}

func decodeTopStruct(raw json.RawMessage, path string, opt options) (*rawStruct, error) {
	obj, err := decodeObject(raw, "DeltaStructType", path)
	if err != nil {
		return nil, err
	}
	if t, ok := obj["type"]; ok && !isNull(t) {
		var name string
		if err := json.Unmarshal(t, &name); err != nil {
			return nil, cannotConstruct("DeltaStructType", path)
		}
		if name != "struct" {
			return nil, fmt.Errorf("%s: Unsupported Delta type: %s", path, name)
		}
	}
	return decodeStruct(obj, path, opt)
}

func decodeStruct(obj map[string]json.RawMessage, path string, opt options) (*rawStruct, error) {
	rs := &rawStruct{}
	raw, ok := obj["fields"]
	if !ok || isNull(raw) {
		return rs, nil
	}
	var elems []json.RawMessage
	if firstByte(raw) != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, cannotConstruct("List<DeltaStructField>", path+".fields")
	}
	rs.fieldsSet = true
	rs.fields = make([]*rawField, len(elems))
	for i, e := range elems {
		if isNull(e) {
			continue
		}
		f, err := decodeField(e, fmt.Sprintf("%s.fields[%d]", path, i), opt)
		if err != nil {
			return nil, err
		}
		rs.fields[i] = f
	}
	return rs, nil
}

func decodeField(raw json.RawMessage, path string, opt options) (*rawField, error) {
	obj, err := decodeObject(raw, "DeltaStructField", path)
	if err != nil {
		return nil, err
	}
	f := &rawField{}
	if v, ok := obj["name"]; ok && !isNull(v) {
		var name string
		if firstByte(v) != '"' || json.Unmarshal(v, &name) != nil {
			return nil, cannotConstruct("String", path+".name")
		}
		f.name = &name
	}
	if f.typ, err = decodeType(obj["type"], path+".type", opt); err != nil {
		return nil, err
	}
	if f.nullable, err = decodeBool(obj["nullable"], path+".nullable"); err != nil {
		return nil, err
	}
	if v, ok := obj["metadata"]; ok && !isNull(v) {
		if firstByte(v) != '{' {
			return nil, cannotConstruct("Map", path+".metadata")
		}
		if f.metadata, err = canonicalJSON(v); err != nil {
			return nil, cannotConstruct("Map", path+".metadata")
		}
	}
	return f, nil
}

func decodeType(raw json.RawMessage, path string, opt options) (rawType, error) {
	if isNull(raw) {
		return nil, nil
	}
	switch firstByte(raw) {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, cannotConstruct("DeltaDataType", path)
		}
		return decodeTypeString(s, path)
	case '{':
	default:
		return nil, cannotConstruct("DeltaDataType", path)
	}
	obj, err := decodeObject(raw, "DeltaDataType", path)
	if err != nil {
		return nil, err
	}
	var kind string
	if t := obj["type"]; isNull(t) || firstByte(t) != '"' || json.Unmarshal(t, &kind) != nil {
		return nil, cannotConstruct("DeltaDataType", path)
	}
	k := opt.keys
	switch kind {
	case "array":
		a := &rawArray{}
		if a.elementType, err = decodeType(obj[k.elementType], path+"."+k.elementType, opt); err != nil {
			return nil, err
		}
		if a.containsNull, err = decodeBool(obj[k.containsNull], path+"."+k.containsNull); err != nil {
			return nil, err
		}
		return a, nil
	case "map":
		m := &rawMap{}
		if m.keyType, err = decodeType(obj[k.keyType], path+"."+k.keyType, opt); err != nil {
			return nil, err
		}
		if m.valueType, err = decodeType(obj[k.valueType], path+"."+k.valueType, opt); err != nil {
			return nil, err
		}
		if m.valueContainsNull, err = decodeBool(obj[k.valueContainsNull], path+"."+k.valueContainsNull); err != nil {
			return nil, err
		}
		return m, nil
	case "struct":
		return decodeStruct(obj, path, opt)
	case "decimal":
		d := &rawDecimal{}
		if d.precision, err = decodeInt(obj["precision"], path+".precision"); err != nil {
			return nil, err
		}
		if d.scale, err = decodeInt(obj["scale"], path+".scale"); err != nil {
			return nil, err
		}
		return d, nil
	default:
		return nil, fmt.Errorf("%s: Unsupported Delta type: %s", path, kind)
	}
}

// decodeTypeString handles the string form of a type: "decimal(p,s)" or a
// primitive name. Primitive names are checked in pass 2.
func decodeTypeString(s, path string) (rawType, error) {
	m := decimalPattern.FindStringSubmatch(s)
	if m == nil {
		return rawPrimitive(s), nil
	}
	p, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s.precision must be in [0, 38], got %s.", path, m[1])
	}
	sc, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s.scale must be in [0, precision=%d], got %s.", path, p, m[2])
	}
	return &rawDecimal{precision: &p, scale: &sc}, nil
}

func decodeObject(raw json.RawMessage, what, path string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if firstByte(raw) != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, cannotConstruct(what, path)
	}
	return obj, nil
}

func decodeBool(raw json.RawMessage, path string) (*bool, error) {
	if isNull(raw) {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, cannotConstruct("Boolean", path)
	}
	return &b, nil
}

// decodeInt accepts JSON integers in the 32-bit range, like the Java
// Integer members of the reference model.
func decodeInt(raw json.RawMessage, path string) (*int64, error) {
	if isNull(raw) {
		return nil, nil
	}
	c := firstByte(raw)
	if c != '-' && (c < '0' || c > '9') {
		return nil, cannotConstruct("Integer", path)
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 32)
	if err != nil {
		return nil, cannotConstruct("Integer", path)
	}
	return &n, nil
}

// ---- pass 2: validate ----

func validateStruct(rs *rawStruct, path string, top bool, opt options) (*Struct, error) {
	if rs == nil {
		return nil, required(path)
	}
	if !rs.fieldsSet && !(top || opt.lenient) {
		return nil, required(path + ".fields")
	}
	if top && len(rs.fields) == 0 && !opt.lenient {
		return nil, fmt.Errorf("%s.fields must contain at least one field.", path)
	}
	s := &Struct{Fields: make([]Field, 0, len(rs.fields))}
	seen := make(map[string]bool, len(rs.fields))
	for i, rf := range rs.fields {
		fieldPath := fmt.Sprintf("%s.fields[%d]", path, i)
		if rf == nil {
			return nil, required(fieldPath)
		}
		f, err := validateField(rf, fieldPath, opt)
		if err != nil {
			return nil, err
		}
		lower := strings.ToLower(f.Name)
		if seen[lower] && !opt.lenient {
			return nil, fmt.Errorf("Duplicate field name (case-insensitive) in %s: %s", fieldPath, f.Name)
		}
		seen[lower] = true
		s.Fields = append(s.Fields, f)
	}
	return s, nil
}

func validateField(rf *rawField, path string, opt options) (Field, error) {
	if rf.name == nil || (!opt.lenient && strings.TrimSpace(*rf.name) == "") {
		return Field{}, required(path + ".name")
	}
	if rf.typ == nil {
		return Field{}, required(path + ".type")
	}
	nullable, err := requireBool(rf.nullable, path+".nullable", opt)
	if err != nil {
		return Field{}, err
	}
	metadata := rf.metadata
	if metadata == nil {
		if !opt.lenient {
			return Field{}, required(path + ".metadata")
		}
		metadata = json.RawMessage("{}")
	}
	t, err := validateType(rf.typ, path+".type", opt)
	if err != nil {
		return Field{}, err
	}
	return Field{Name: *rf.name, Type: t, Nullable: nullable, Metadata: metadata}, nil
}

func validateType(rt rawType, path string, opt options) (Type, error) {
	k := opt.keys
	switch t := rt.(type) {
	case rawPrimitive:
		name := string(t)
		if _, ok := primitiveTypeNames[name]; !ok && !opt.lenient {
			return nil, fmt.Errorf("%s: Unsupported Delta primitive type: %s", path, name)
		}
		return &Primitive{Name: name}, nil
	case *rawDecimal:
		return validateDecimal(t, path)
	case *rawArray:
		if t.elementType == nil {
			return nil, required(path + "." + k.elementType)
		}
		containsNull, err := requireBool(t.containsNull, path+"."+k.containsNull, opt)
		if err != nil {
			return nil, err
		}
		elem, err := validateType(t.elementType, path+"."+k.elementType, opt)
		if err != nil {
			return nil, err
		}
		return &Array{ElementType: elem, ContainsNull: containsNull}, nil
	case *rawMap:
		if t.keyType == nil {
			return nil, required(path + "." + k.keyType)
		}
		if t.valueType == nil {
			return nil, required(path + "." + k.valueType)
		}
		valueContainsNull, err := requireBool(t.valueContainsNull, path+"."+k.valueContainsNull, opt)
		if err != nil {
			return nil, err
		}
		key, err := validateType(t.keyType, path+"."+k.keyType, opt)
		if err != nil {
			return nil, err
		}
		value, err := validateType(t.valueType, path+"."+k.valueType, opt)
		if err != nil {
			return nil, err
		}
		return &Map{KeyType: key, ValueType: value, ValueContainsNull: valueContainsNull}, nil
	case *rawStruct:
		return validateStruct(t, path, false, opt)
	default:
		return nil, required(path)
	}
}

// validateDecimal applies Delta Kernel's bounds; precision 0 is degenerate
// but accepted there, so it is accepted here too.
func validateDecimal(d *rawDecimal, path string) (*Decimal, error) {
	if d.precision == nil {
		return nil, required(path + ".precision")
	}
	if d.scale == nil {
		return nil, required(path + ".scale")
	}
	p, s := *d.precision, *d.scale
	if p < 0 || p > 38 {
		return nil, fmt.Errorf("%s.precision must be in [0, 38], got %d.", path, p)
	}
	if s < 0 || s > p {
		return nil, fmt.Errorf("%s.scale must be in [0, precision=%d], got %d.", path, p, s)
	}
	return &Decimal{Precision: int(p), Scale: int(s)}, nil
}

// requireBool returns the flag, defaulting to true in lenient mode, as
// Spark does for schemas written without the flag.
func requireBool(b *bool, path string, opt options) (bool, error) {
	if b != nil {
		return *b, nil
	}
	if opt.lenient {
		return true, nil
	}
	return false, required(path)
}

// ---- helpers ----

func required(path string) error {
	return errors.New(path + " is required.")
}

// cannotConstruct reports a JSON shape mismatch in the wording of the
// reference server's deserialiser, which clients may match on.
func cannotConstruct(what, path string) error {
	return fmt.Errorf("Cannot construct instance of %s at %s", what, path)
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func firstByte(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}
