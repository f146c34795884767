package deltaschema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// schema wraps field JSON snippets in a top-level struct.
func schema(fields ...string) json.RawMessage {
	return json.RawMessage(`{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`)
}

// col is a complete field whose type is the given JSON.
func col(name, typ string) string {
	return `{"name":"` + name + `","type":` + typ + `,"nullable":true,"metadata":{}}`
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		raw  json.RawMessage
		want string
	}{
		{"nil", nil, "columns is required."},
		{"null", json.RawMessage("null"), "columns is required."},
		{"blank", json.RawMessage("  "), "columns is required."},
		{"empty fields", schema(), "columns.fields must contain at least one field."},
		{"missing fields", json.RawMessage(`{"type":"struct"}`), "columns.fields must contain at least one field."},
		{"null fields", json.RawMessage(`{"type":"struct","fields":null}`), "columns.fields must contain at least one field."},
		{"missing name", schema(`{"type":"long","nullable":true,"metadata":{}}`), "columns.fields[0].name is required."},
		{"null name", schema(`{"name":null,"type":"long","nullable":true,"metadata":{}}`), "columns.fields[0].name is required."},
		{"blank name", schema(`{"name":"  ","type":"long","nullable":true,"metadata":{}}`), "columns.fields[0].name is required."},
		{"second field missing type", schema(col("a", `"long"`), `{"name":"b","nullable":true,"metadata":{}}`), "columns.fields[1].type is required."},
		{"null type", schema(`{"name":"a","type":null,"nullable":true,"metadata":{}}`), "columns.fields[0].type is required."},
		{"missing nullable", schema(`{"name":"a","type":"long","metadata":{}}`), "columns.fields[0].nullable is required."},
		{"missing metadata", schema(`{"name":"a","type":"long","nullable":true}`), "columns.fields[0].metadata is required."},
		{"null metadata", schema(`{"name":"a","type":"long","nullable":true,"metadata":null}`), "columns.fields[0].metadata is required."},
		{"null field", schema(`null`), "columns.fields[0] is required."},
		{"void", schema(col("a", `"void"`)), "columns.fields[0].type: Unsupported Delta primitive type: void"},
		{"bare decimal", schema(col("a", `"decimal"`)), "columns.fields[0].type: Unsupported Delta primitive type: decimal"},
		{"primitive case matters", schema(col("a", `"LONG"`)), "columns.fields[0].type: Unsupported Delta primitive type: LONG"},
		{"array missing contains-null", schema(col("a", `{"type":"array","element-type":"long"}`)), "columns.fields[0].type.contains-null is required."},
		{"array missing element-type", schema(col("a", `{"type":"array","contains-null":true}`)), "columns.fields[0].type.element-type is required."},
		{"array bad element", schema(col("a", `{"type":"array","element-type":"void","contains-null":true}`)), "columns.fields[0].type.element-type: Unsupported Delta primitive type: void"},
		{"map missing key-type", schema(col("a", `{"type":"map","value-type":"long","value-contains-null":true}`)), "columns.fields[0].type.key-type is required."},
		{"map missing value-type", schema(col("a", `{"type":"map","key-type":"string","value-contains-null":true}`)), "columns.fields[0].type.value-type is required."},
		{"map missing value-contains-null", schema(col("a", `{"type":"map","key-type":"string","value-type":"long"}`)), "columns.fields[0].type.value-contains-null is required."},
		{"map bad value", schema(col("a", `{"type":"map","key-type":"string","value-type":"void","value-contains-null":true}`)), "columns.fields[0].type.value-type: Unsupported Delta primitive type: void"},
		{"decimal precision too big", schema(col("a", `"decimal(50,2)"`)), "columns.fields[0].type.precision must be in [0, 38], got 50."},
		{"decimal object negative precision", schema(col("a", `{"type":"decimal","precision":-1,"scale":0}`)), "columns.fields[0].type.precision must be in [0, 38], got -1."},
		{"decimal scale above precision", schema(col("a", `"decimal(5,10)"`)), "columns.fields[0].type.scale must be in [0, precision=5], got 10."},
		{"decimal object negative scale", schema(col("a", `{"type":"decimal","precision":5,"scale":-1}`)), "columns.fields[0].type.scale must be in [0, precision=5], got -1."},
		{"decimal object missing precision", schema(col("a", `{"type":"decimal","scale":2}`)), "columns.fields[0].type.precision is required."},
		{"decimal object missing scale", schema(col("a", `{"type":"decimal","precision":5}`)), "columns.fields[0].type.scale is required."},
		{"nested struct missing name", schema(col("a", `{"type":"array","element-type":{"type":"struct","fields":[{"type":"long","nullable":true,"metadata":{}}]},"contains-null":true}`)), "columns.fields[0].type.element-type.fields[0].name is required."},
		{"nested struct missing fields", schema(col("a", `{"type":"struct"}`)), "columns.fields[0].type.fields is required."},
		{"duplicate", schema(col("id", `"long"`), col("ID", `"string"`)), "Duplicate field name (case-insensitive) in columns.fields[1]: ID"},
		{"nested duplicate", schema(col("a", `{"type":"array","element-type":{"type":"struct","fields":[`+col("x", `"long"`)+`,`+col("x", `"long"`)+`]},"contains-null":true}`)), "Duplicate field name (case-insensitive) in columns.fields[0].type.element-type.fields[1]: x"},
		{"field is string", schema(`"long"`), "Cannot construct instance of DeltaStructField at columns.fields[0]"},
		{"unknown object type", schema(col("a", `{"type":"union"}`)), "columns.fields[0].type: Unsupported Delta type: union"},
		{"primitive as object", schema(col("a", `{"type":"long"}`)), "columns.fields[0].type: Unsupported Delta type: long"},
		{"top-level not struct", json.RawMessage(`{"type":"array","fields":[]}`), "columns: Unsupported Delta type: array"},
		// Shape errors are found while decoding, before any validation.
		{"shape error beats earlier missing name", schema(`{"type":"long","nullable":true,"metadata":{}}`, `"long"`), "Cannot construct instance of DeltaStructField at columns.fields[1]"},
		// The field's own members are required before its type is checked.
		{"missing nullable beats bad type", schema(`{"name":"a","type":"void","metadata":{}}`), "columns.fields[0].nullable is required."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("columns", tc.raw)
			if err == nil {
				t.Fatalf("Parse succeeded with %s, want error %q", s.Canonical(), tc.want)
			}
			if err.Error() != tc.want {
				t.Fatalf("error = %q, want %q", err.Error(), tc.want)
			}
		})
	}
}

func TestParseShapeErrors(t *testing.T) {
	tests := []struct {
		name string
		raw  json.RawMessage
	}{
		{"top-level array", json.RawMessage(`[]`)},
		{"top-level string", json.RawMessage(`"struct"`)},
		{"invalid json", json.RawMessage(`{"type":`)},
		{"fields not array", json.RawMessage(`{"type":"struct","fields":{}}`)},
		{"field is number", schema(`1`)},
		{"name not string", schema(`{"name":1,"type":"long","nullable":true,"metadata":{}}`)},
		{"type is number", schema(col("a", `5`))},
		{"type is array", schema(col("a", `["long"]`))},
		{"nullable is string", schema(`{"name":"a","type":"long","nullable":"yes","metadata":{}}`)},
		{"metadata is array", schema(`{"name":"a","type":"long","nullable":true,"metadata":[]}`)},
		{"metadata is string", schema(`{"name":"a","type":"long","nullable":true,"metadata":"x"}`)},
		{"contains-null is number", schema(col("a", `{"type":"array","element-type":"long","contains-null":1}`))},
		{"precision is string", schema(col("a", `{"type":"decimal","precision":"5","scale":2}`))},
		{"precision is fraction", schema(col("a", `{"type":"decimal","precision":5.5,"scale":2}`))},
		{"object type without discriminator", schema(col("a", `{"element-type":"long"}`))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("columns", tc.raw)
			if err == nil || !strings.Contains(err.Error(), "Cannot construct instance of") {
				t.Fatalf("error = %v, want a \"Cannot construct instance of\" error", err)
			}
		})
	}
}

func TestParsePrimitives(t *testing.T) {
	tests := []struct {
		typ, text, name string
	}{
		{"boolean", "boolean", "BOOLEAN"},
		{"byte", "tinyint", "BYTE"},
		{"short", "smallint", "SHORT"},
		{"integer", "int", "INT"},
		{"long", "bigint", "LONG"},
		{"float", "float", "FLOAT"},
		{"double", "double", "DOUBLE"},
		{"date", "date", "DATE"},
		{"timestamp", "timestamp", "TIMESTAMP"},
		{"timestamp_ntz", "timestamp_ntz", "TIMESTAMP_NTZ"},
		{"string", "string", "STRING"},
		{"binary", "binary", "BINARY"},
		{"variant", "variant", "VARIANT"},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			raw := schema(`{"name":"c","type":"` + tc.typ + `","nullable":false,"metadata":{}}`)
			s, err := Parse("columns", raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(s.Canonical()); got != string(raw) {
				t.Errorf("Canonical = %s, want %s", got, raw)
			}
			cols := s.ColumnInfos(nil)
			want := ColumnInfo{
				Name:     "c",
				TypeText: tc.text,
				TypeJSON: `{"name":"c","type":"` + tc.typ + `","nullable":false,"metadata":{}}`,
				TypeName: tc.name,
				Position: 0,
				Nullable: false,
			}
			if len(cols) != 1 || !reflect.DeepEqual(cols[0], want) {
				t.Errorf("ColumnInfos = %+v, want %+v", cols, want)
			}
		})
	}
}

func TestParseCanonical(t *testing.T) {
	tests := []struct {
		name string
		typ  string // field type as sent
		want string // field type as echoed
	}{
		{"decimal string", `"decimal(10,2)"`, `"decimal(10,2)"`},
		{"decimal string with space", `"decimal(10, 2)"`, `"decimal(10,2)"`},
		{"decimal object", `{"type":"decimal","precision":38,"scale":38}`, `"decimal(38,38)"`},
		{"decimal zero", `{"type":"decimal","precision":0,"scale":0}`, `"decimal(0,0)"`},
		{"array", `{"contains-null":false,"element-type":"string","type":"array"}`, `{"type":"array","element-type":"string","contains-null":false}`},
		{"map", `{"type":"map","value-contains-null":true,"value-type":"decimal(3,1)","key-type":"string"}`, `{"type":"map","key-type":"string","value-type":"decimal(3,1)","value-contains-null":true}`},
		{"map of arrays", `{"type":"map","key-type":"string","value-type":{"type":"array","element-type":"long","contains-null":true},"value-contains-null":false}`, `{"type":"map","key-type":"string","value-type":{"type":"array","element-type":"long","contains-null":true},"value-contains-null":false}`},
		{"nested struct", `{"type":"struct","fields":[{"metadata":{},"nullable":false,"type":"integer","name":"x"}]}`, `{"type":"struct","fields":[{"name":"x","type":"integer","nullable":false,"metadata":{}}]}`},
		{"empty nested struct", `{"type":"struct","fields":[]}`, `{"type":"struct","fields":[]}`},
		{"array of structs", `{"type":"array","element-type":{"type":"struct","fields":[` + col("y", `"date"`) + `]},"contains-null":true}`, `{"type":"array","element-type":{"type":"struct","fields":[{"name":"y","type":"date","nullable":true,"metadata":{}}]},"contains-null":true}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("columns", schema(col("c", tc.typ)))
			if err != nil {
				t.Fatal(err)
			}
			want := string(schema(col("c", tc.want)))
			if got := string(s.Canonical()); got != want {
				t.Errorf("Canonical =\n %s\nwant\n %s", got, want)
			}
			// The canonical form must parse back to itself.
			again, err := Parse("columns", s.Canonical())
			if err != nil {
				t.Fatalf("re-parse: %v", err)
			}
			if got := string(again.Canonical()); got != want {
				t.Errorf("re-parsed Canonical = %s, want %s", got, want)
			}
		})
	}
}

func TestParseTypes(t *testing.T) {
	raw := schema(col("m", `{"type":"map","key-type":"string","value-type":{"type":"array","element-type":{"type":"decimal","precision":9,"scale":3},"contains-null":false},"value-contains-null":true}`))
	s, err := Parse("columns", raw)
	if err != nil {
		t.Fatal(err)
	}
	want := &Struct{Fields: []Field{{
		Name: "m",
		Type: &Map{
			KeyType:           &Primitive{Name: "string"},
			ValueType:         &Array{ElementType: &Decimal{Precision: 9, Scale: 3}, ContainsNull: false},
			ValueContainsNull: true,
		},
		Nullable: true,
		Metadata: json.RawMessage("{}"),
	}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Parse = %#v, want %#v", s, want)
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", `{}`, `{}`},
		{"ints and bools", `{"delta.identity.start":1,"delta.identity.allowExplicitInsert":false,"delta.identity.step":-1}`, `{"delta.identity.allowExplicitInsert":false,"delta.identity.start":1,"delta.identity.step":-1}`},
		{"big int kept exactly", `{"n":12345678901234567890123}`, `{"n":12345678901234567890123}`},
		{"number spelling kept", `{"a":1.50,"b":1e3}`, `{"a":1.50,"b":1e3}`},
		{"nested objects sorted", `{"z":{"b":[1,{"y":2,"x":1}],"a":null},"comment":"hi <there> & co"}`, `{"comment":"hi <there> & co","z":{"a":null,"b":[1,{"x":1,"y":2}]}}`},
		{"whitespace compacted", "{ \"a\" : [ 1 , 2 ] ,\n \"b\" : \"\u00e9\" }", `{"a":[1,2],"b":"é"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("columns", schema(`{"name":"c","type":"long","nullable":true,"metadata":`+tc.in+`}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(s.Fields[0].Metadata); got != tc.want {
				t.Errorf("Metadata = %s, want %s", got, tc.want)
			}
			want := `{"type":"struct","fields":[{"name":"c","type":"long","nullable":true,"metadata":` + tc.want + `}]}`
			if got := string(s.Canonical()); got != want {
				t.Errorf("Canonical = %s, want %s", got, want)
			}
		})
	}
}

func TestColumnInfos(t *testing.T) {
	raw := schema(
		`{"name":"id","type":"long","nullable":false,"metadata":{"comment":"primary key","x":1}}`,
		`{"name":"Region","type":"string","nullable":true,"metadata":{"comment":42}}`,
		col("amount", `{"type":"decimal","precision":12,"scale":2}`),
		col("tags", `{"type":"array","element-type":"string","contains-null":true}`),
		col("attrs", `{"type":"map","key-type":"string","value-type":"integer","value-contains-null":false}`),
		col("addr", `{"type":"struct","fields":[`+col("street", `"string"`)+`,`+col("zip", `"short"`)+`,`+col("geo", `{"type":"array","element-type":"double","contains-null":false}`)+`]}`),
		col("day", `"date"`),
	)
	s, err := Parse("columns", raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.TopLevelNames(), []string{"id", "Region", "amount", "tags", "attrs", "addr", "day"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TopLevelNames = %v, want %v", got, want)
	}
	idx := func(i int) *int { return &i }
	want := []ColumnInfo{
		{Name: "id", TypeText: "bigint", TypeJSON: `{"name":"id","type":"long","nullable":false,"metadata":{"comment":"primary key","x":1}}`, TypeName: "LONG", Position: 0, Comment: "primary key", Nullable: false},
		{Name: "Region", TypeText: "string", TypeJSON: `{"name":"Region","type":"string","nullable":true,"metadata":{"comment":42}}`, TypeName: "STRING", Position: 1, Nullable: true, PartitionIndex: idx(1)},
		{Name: "amount", TypeText: "decimal(12,2)", TypeJSON: `{"name":"amount","type":"decimal(12,2)","nullable":true,"metadata":{}}`, TypeName: "DECIMAL", TypePrecision: 12, TypeScale: 2, Position: 2, Nullable: true},
		{Name: "tags", TypeText: "array<string>", TypeJSON: `{"name":"tags","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}}`, TypeName: "ARRAY", Position: 3, Nullable: true},
		{Name: "attrs", TypeText: "map<string,int>", TypeJSON: `{"name":"attrs","type":{"type":"map","keyType":"string","valueType":"integer","valueContainsNull":false},"nullable":true,"metadata":{}}`, TypeName: "MAP", Position: 4, Nullable: true},
		{Name: "addr", TypeText: "struct<street:string,zip:smallint,geo:array<double>>", TypeJSON: `{"name":"addr","type":{"type":"struct","fields":[{"name":"street","type":"string","nullable":true,"metadata":{}},{"name":"zip","type":"short","nullable":true,"metadata":{}},{"name":"geo","type":{"type":"array","elementType":"double","containsNull":false},"nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}`, TypeName: "STRUCT", Position: 5, Nullable: true},
		{Name: "day", TypeText: "date", TypeJSON: `{"name":"day","type":"date","nullable":true,"metadata":{}}`, TypeName: "DATE", Position: 6, Nullable: true, PartitionIndex: idx(0)},
	}
	got := s.ColumnInfos([]string{"DAY", "region", "nope"})
	if len(got) != len(want) {
		t.Fatalf("got %d columns, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("column %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
		if !json.Valid([]byte(got[i].TypeJSON)) {
			t.Errorf("column %d: type_json is not valid JSON: %s", i, got[i].TypeJSON)
		}
	}

	// The REST encoding uses snake_case and omits unset optionals.
	b, err := json.Marshal(got[2])
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"name":"amount","type_text":"decimal(12,2)","type_json":"{\"name\":\"amount\",\"type\":\"decimal(12,2)\",\"nullable\":true,\"metadata\":{}}","type_name":"DECIMAL","type_precision":12,"type_scale":2,"position":2,"nullable":true}`
	if string(b) != wantJSON {
		t.Errorf("json = %s\nwant   %s", b, wantJSON)
	}
	b, err = json.Marshal(got[6])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"partition_index":0`) {
		t.Errorf("json = %s, want partition_index 0", b)
	}
}

func TestEmpty(t *testing.T) {
	if got := string(Empty()); got != `{"type":"struct","fields":[]}` {
		t.Errorf("Empty = %s", got)
	}
	var s *Struct
	if got := string(s.Canonical()); got != string(Empty()) {
		t.Errorf("nil Canonical = %s", got)
	}
}

// realSchemaString is copied from the checkpoint-v2-table test table
// (_delta_log/00000000000000000000.json), an identity-column table.
const realSchemaString = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{"delta.identity.step":1,"delta.identity.allowExplicitInsert":false,"delta.identity.start":1}},{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"created_at","type":"timestamp","nullable":true,"metadata":{}}]}`

func TestParseSchemaString(t *testing.T) {
	s, err := ParseSchemaString(realSchemaString)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.TopLevelNames(), []string{"id", "name", "created_at"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TopLevelNames = %v, want %v", got, want)
	}
	cols := s.ColumnInfos(nil)
	wantJSON := `{"name":"id","type":"long","nullable":true,"metadata":{"delta.identity.allowExplicitInsert":false,"delta.identity.start":1,"delta.identity.step":1}}`
	if cols[0].TypeJSON != wantJSON || cols[0].TypeName != "LONG" || cols[0].TypeText != "bigint" {
		t.Errorf("column 0 = %+v", cols[0])
	}
	if cols[2].TypeName != "TIMESTAMP" {
		t.Errorf("column 2 type_name = %s", cols[2].TypeName)
	}
	// The kebab-case form of the same schema is accepted by the strict parser.
	if _, err := Parse("columns", s.Canonical()); err != nil {
		t.Errorf("strict re-parse: %v", err)
	}
}

func TestParseSchemaStringNested(t *testing.T) {
	in := `{"type":"struct","fields":[` +
		`{"name":"a","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":false,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","keyType":"string","valueType":"decimal(5, 1)","valueContainsNull":false},"nullable":false,"metadata":{"comment":"c"}}]}`
	s, err := ParseSchemaString(in)
	if err != nil {
		t.Fatal(err)
	}
	wantCanonical := `{"type":"struct","fields":[` +
		`{"name":"a","type":{"type":"array","element-type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":false,"metadata":{}}]},"contains-null":true},"nullable":true,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","key-type":"string","value-type":"decimal(5,1)","value-contains-null":false},"nullable":false,"metadata":{"comment":"c"}}]}`
	if got := string(s.Canonical()); got != wantCanonical {
		t.Errorf("Canonical =\n %s\nwant\n %s", got, wantCanonical)
	}
	cols := s.ColumnInfos(nil)
	if cols[0].TypeText != "array<struct<x:int>>" || cols[1].TypeText != "map<string,decimal(5,1)>" || cols[1].Comment != "c" {
		t.Errorf("columns = %+v", cols)
	}
	wantTypeJSON := `{"name":"m","type":{"type":"map","keyType":"string","valueType":"decimal(5,1)","valueContainsNull":false},"nullable":false,"metadata":{"comment":"c"}}`
	if cols[1].TypeJSON != wantTypeJSON {
		t.Errorf("type_json = %s, want %s", cols[1].TypeJSON, wantTypeJSON)
	}
}

func TestParseSchemaStringLenient(t *testing.T) {
	// Missing flags default to true, missing metadata to {}, and primitives
	// outside the UC set pass through.
	s, err := ParseSchemaString(`{"type":"struct","fields":[{"name":"v","type":"void"},{"name":"a","type":{"type":"array","elementType":"long"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[{"name":"v","type":"void","nullable":true,"metadata":{}},{"name":"a","type":{"type":"array","element-type":"long","contains-null":true},"nullable":true,"metadata":{}}]}`
	if got := string(s.Canonical()); got != want {
		t.Errorf("Canonical = %s, want %s", got, want)
	}
	if got := s.ColumnInfos(nil)[0].TypeName; got != "VOID" {
		t.Errorf("type_name = %s, want VOID", got)
	}
	for _, bad := range []string{``, `[]`, `{"type":"struct","fields":[{"type":"long"}]}`, `{"type":"struct","fields":[{"name":"a","type":"decimal(40,1)"}]}`} {
		if _, err := ParseSchemaString(bad); err == nil {
			t.Errorf("ParseSchemaString(%q) succeeded, want error", bad)
		}
	}
}

// Spark StructField documents (UC REST's type_json) are held to the same
// rules as the UC wire form, with camelCase keys and the caller's paths.
func TestParseSparkFields(t *testing.T) {
	path := func(i int) string { return "columns[" + string(rune('0'+i)) + "].type_json" }
	doc := func(s string) json.RawMessage { return json.RawMessage(s) }
	s, err := ParseSparkFields([]json.RawMessage{
		doc(`{"name":"id","type":"long","nullable":false,"metadata":{}}`),
		doc(`{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"decimal(5,2)","containsNull":true},"valueContainsNull":false},"nullable":true,"metadata":{"comment":"c"}}`),
	}, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Canonical()); !strings.Contains(got, `"value-type":{"type":"array","element-type":"decimal(5,2)"`) || len(s.Fields) != 2 {
		t.Fatalf("canonical form %s", got)
	}
	bad := []struct {
		docs []string
		want string
	}{
		{[]string{`{"name":"w","type":"wibble","nullable":true,"metadata":{}}`}, "columns[0].type_json.type: Unsupported Delta primitive type: wibble"},
		{[]string{`{"name":"a","type":{"type":"array","element-type":"long","contains-null":true},"nullable":true,"metadata":{}}`}, "columns[0].type_json.type.elementType is required."},
		{[]string{`{"name":"a","type":"long","metadata":{}}`}, "columns[0].type_json.nullable is required."},
		{[]string{`{"name":"a","type":"long","nullable":true}`}, "columns[0].type_json.metadata is required."},
		{[]string{`{"name":"a","type":"long","nullable":true,"metadata":{}}`, `{"name":"A","type":"long","nullable":true,"metadata":{}}`}, "Duplicate field name (case-insensitive) in columns[1].type_json: A"},
		{[]string{`"long"`}, "Cannot construct instance of DeltaStructField at columns[0].type_json"},
		{[]string{`null`}, "columns[0].type_json is required."},
	}
	for _, b := range bad {
		var docs []json.RawMessage
		for _, d := range b.docs {
			docs = append(docs, doc(d))
		}
		if _, err := ParseSparkFields(docs, path); err == nil || err.Error() != b.want {
			t.Errorf("ParseSparkFields(%v) = %v, want %q", b.docs, err, b.want)
		}
	}
}
