package sharing

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hn builds a hint node; String gives the hint text.
type hn map[string]any

func hCol(name, valueType string) hn {
	return hn{"op": "column", "name": name, "valueType": valueType}
}

func hLit(value, valueType string) hn {
	return hn{"op": "literal", "value": value, "valueType": valueType}
}

func hOp(op string, children ...hn) hn { return hn{"op": op, "children": children} }

func (n hn) String() string {
	b, err := json.Marshal(n)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func hStr(s string) *string { return &s }

// namedFile is a hintFile with a name to report.
type namedFile struct {
	name string
	hintFile
}

// kept compiles hint and returns the names of the files it keeps; a
// skipped hint fails the test.
func kept(t *testing.T, hint string, columns map[string]hintColumn, files []namedFile) []string {
	t.Helper()
	keep, skipped := compileHint(hint, columns)
	if keep == nil {
		t.Fatalf("hint %s skipped: %s", hint, skipped)
	}
	if skipped != "" {
		t.Fatalf("hint %s: filter with a reason %q", hint, skipped)
	}
	out := []string{}
	for _, f := range files {
		if keep(f.hintFile) {
			out = append(out, f.name)
		}
	}
	return out
}

// The digest's "parted" table: partition column date; p4 holds id 1, p5
// ids 5 to 7.
var (
	partedColumns = map[string]hintColumn{
		"date": {Physical: "date", Type: "date", Partition: true},
		"id":   {Physical: "id", Type: "long"},
		"note": {Physical: "note", Type: "string"},
	}
	partedFiles = []namedFile{
		{"p4", hintFile{
			PartitionValues: map[string]*string{"date": hStr("2021-01-01")},
			Stats:           `{"numRecords":1,"minValues":{"id":1,"note":"a"},"maxValues":{"id":1,"note":"a"},"nullCount":{"id":0,"note":0}}`,
		}},
		{"p5", hintFile{
			PartitionValues: map[string]*string{"date": hStr("2021-01-03")},
			Stats:           `{"numRecords":3,"minValues":{"id":5,"note":"b"},"maxValues":{"id":7,"note":"c"},"nullCount":{"id":0,"note":1}}`,
		}},
	}
)

func TestHintDigestCases(t *testing.T) {
	t.Parallel()
	date := hCol("date", "date")
	tests := []struct {
		name string
		hint hn
		want []string
	}{
		{"34 equal partition date", hOp("equal", date, hLit("2021-01-03", "date")), []string{"p5"}},
		{"36 id > 4 on stats", hOp("greaterThan", hCol("id", "long"), hLit("4", "long")), []string{"p5"}},
		{"37 isNull(date)", hOp("isNull", date), []string{}},
		{"37 not(isNull(date))", hOp("not", hOp("isNull", date)), []string{"p4", "p5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := kept(t, tt.hint.String(), partedColumns, partedFiles); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

// nestNot wraps c in n "not"s: the tree is n+2 levels deep.
func nestNot(c hn, n int) hn {
	for range n {
		c = hOp("not", c)
	}
	return c
}

func TestHintSkippedWhole(t *testing.T) {
	t.Parallel()
	id, idLit := hCol("id", "long"), hLit("4", "long")
	columns := map[string]hintColumn{
		"id":    {Physical: "id", Type: "long"},
		"name":  {Physical: "name", Type: "string"},
		"ts":    {Physical: "ts", Type: "timestamp"},
		"price": {Physical: "price", Type: "decimal(10,2)"},
		"Dup":   {Physical: "dup1", Type: "long"},
		"dUP":   {Physical: "dup2", Type: "long"},
	}
	tests := []struct {
		name string
		hint string
	}{
		{"garbage", "garbage"},
		{"json null", "null"},
		{"json array", `[{"op":"equal"}]`},
		{"trailing garbage", hOp("equal", id, idLit).String() + "x"},
		{"value not a string", `{"op":"equal","children":[{"op":"column","name":"id","valueType":"long"},{"op":"literal","value":4,"valueType":"long"}]}`},
		{"valueType integer", hOp("equal", hCol("id", "integer"), hLit("4", "integer")).String()},
		{"unknown valueType on the literal", hOp("equal", id, hLit("4", "bigint")).String()},
		{"unknown op", hOp("like", id, idLit).String()},
		{"op with other case", hOp("Equal", id, idLit).String()},
		{"no op", `{"children":[]}`},
		{"unknown column", hOp("equal", hCol("nope", "long"), idLit).String()},
		{"ambiguous column", hOp("equal", hCol("dup", "long"), idLit).String()},
		{"column type mismatch", hOp("equal", hCol("name", "long"), idLit).String()},
		{"timestamp as date", hOp("equal", hCol("ts", "date"), hLit("2021-01-01", "date")).String()},
		{"decimal column", hOp("equal", hCol("price", "double"), hLit("1.5", "double")).String()},
		{"children of two valueTypes", hOp("equal", id, hLit("4", "int")).String()},
		{"literal not its type", hOp("equal", id, hLit("four", "long")).String()},
		{"date literal not yyyy-mm-dd", hOp("equal", hCol("ts", "timestamp"), hLit("yesterday", "timestamp")).String()},
		{"literal without value", hOp("equal", id, hn{"op": "literal", "valueType": "long"}).String()},
		{"column without name", hOp("equal", hn{"op": "column", "valueType": "long"}, idLit).String()},
		{"leaf without valueType", hOp("equal", hn{"op": "column", "name": "id"}, idLit).String()},
		{"equal with one child", hOp("equal", id).String()},
		{"equal with three children", hOp("equal", id, idLit, idLit).String()},
		{"comparison of a comparison", hOp("equal", hOp("equal", id, idLit), idLit).String()},
		{"isNull without child", hOp("isNull").String()},
		{"isNull with two children", hOp("isNull", id, id).String()},
		{"isNull of a condition", hOp("isNull", hOp("equal", id, idLit)).String()},
		{"not with two children", hOp("not", hOp("isNull", id), hOp("isNull", id)).String()},
		{"and with one child", hOp("and", hOp("isNull", id)).String()},
		{"or without children", hOp("or").String()},
		{"leaf as the condition", id.String()},
		{"leaf under and", hOp("and", hOp("isNull", id), id).String()},
		{"leaf with children", hOp("isNull", hn{"op": "column", "name": "id", "valueType": "long", "children": []hn{idLit}}).String()},
		{"101 levels", nestNot(hOp("equal", id, idLit), 99).String()},
		{"5000 levels", nestNot(hOp("isNull", id), 5000).String()},
		{"over 1 MiB", hOp("or", hOp("equal", id, idLit), hOp("equal", id, hLit(strings.Repeat("1", 1<<20), "long"))).String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keep, skipped := compileHint(tt.hint, columns)
			if keep != nil {
				t.Fatalf("hint %.200s compiled to a filter", tt.hint)
			}
			if skipped == "" {
				t.Errorf("hint %.200s skipped without a reason", tt.hint)
			}
		})
	}

	t.Run("empty hint", func(t *testing.T) {
		t.Parallel()
		if keep, skipped := compileHint("", columns); keep != nil || skipped != "" {
			t.Errorf("compileHint(\"\") = %v, %q; want nil, \"\"", keep != nil, skipped)
		}
	})
	t.Run("100 levels are fine", func(t *testing.T) {
		t.Parallel()
		if keep, skipped := compileHint(nestNot(hOp("equal", id, idLit), 98).String(), columns); keep == nil {
			t.Errorf("100 levels skipped: %s", skipped)
		}
	})
	t.Run("digest case 35", func(t *testing.T) {
		t.Parallel()
		for _, h := range []string{`"garbage"`, "garbage",
			hOp("equal", hCol("date", "integer"), hLit("1", "integer")).String(),
			hOp("equal", hCol("nope", "date"), hLit("2021-01-03", "date")).String(),
		} {
			if keep, _ := compileHint(h, partedColumns); keep != nil {
				t.Errorf("hint %s compiled to a filter", h)
			}
		}
	})
}

// opsFiles have a data column n (long) with the ranges in their names.
var opsFiles = []namedFile{
	{"1..3", hintFile{Stats: `{"numRecords":4,"minValues":{"n":1},"maxValues":{"n":3},"nullCount":{"n":0}}`}},
	{"3..7", hintFile{Stats: `{"numRecords":4,"minValues":{"n":3},"maxValues":{"n":7},"nullCount":{"n":0}}`}},
	{"5..5", hintFile{Stats: `{"numRecords":2,"minValues":{"n":5},"maxValues":{"n":5},"nullCount":{"n":0}}`}},
	{"5..5+null", hintFile{Stats: `{"numRecords":3,"minValues":{"n":5},"maxValues":{"n":5},"nullCount":{"n":1}}`}},
	{"null", hintFile{Stats: `{"numRecords":2,"minValues":{},"maxValues":{},"nullCount":{"n":2}}`}},
	{"nostats", hintFile{}},
	{"badstats", hintFile{Stats: `{"numRecords":`}},
	{"min only", hintFile{Stats: `{"numRecords":2,"minValues":{"n":4},"nullCount":{"n":0}}`}},
}

func TestHintEveryOp(t *testing.T) {
	t.Parallel()
	columns := map[string]hintColumn{"n": {Physical: "n", Type: "integer"}}
	n := hCol("n", "int")
	lit := func(v string) hn { return hLit(v, "int") }
	tests := []struct {
		hint hn
		want []string
	}{
		{hOp("equal", n, lit("3")), []string{"1..3", "3..7", "nostats", "badstats"}},
		{hOp("equal", n, lit("5")), []string{"3..7", "5..5", "5..5+null", "nostats", "badstats", "min only"}},
		{hOp("equal", lit("5"), n), []string{"3..7", "5..5", "5..5+null", "nostats", "badstats", "min only"}},
		{hOp("lessThan", n, lit("3")), []string{"1..3", "nostats", "badstats"}},
		{hOp("lessThanOrEqual", n, lit("3")), []string{"1..3", "3..7", "nostats", "badstats"}},
		{hOp("greaterThan", n, lit("5")), []string{"3..7", "nostats", "badstats", "min only"}},
		{hOp("greaterThanOrEqual", n, lit("5")), []string{"3..7", "5..5", "5..5+null", "nostats", "badstats", "min only"}},
		{hOp("greaterThan", lit("3"), n), []string{"1..3", "nostats", "badstats"}},                 // n < 3
		{hOp("lessThanOrEqual", lit("7"), n), []string{"3..7", "nostats", "badstats", "min only"}}, // n >= 7
		{hOp("isNull", n), []string{"5..5+null", "null", "nostats", "badstats"}},
		{hOp("not", hOp("isNull", n)), []string{"1..3", "3..7", "5..5", "5..5+null", "nostats", "badstats", "min only"}},
		{hOp("not", hOp("equal", n, lit("5"))), []string{"1..3", "3..7", "5..5+null", "null", "nostats", "badstats", "min only"}},
		{hOp("and", hOp("greaterThan", n, lit("2")), hOp("lessThan", n, lit("4"))), []string{"1..3", "3..7", "nostats", "badstats"}},
		{hOp("or", hOp("lessThan", n, lit("2")), hOp("greaterThan", n, lit("6"))), []string{"1..3", "3..7", "nostats", "badstats", "min only"}},
		{hOp("isNull", lit("1")), []string{}},
		{hOp("not", hOp("isNull", lit("1"))), []string{"1..3", "3..7", "5..5", "5..5+null", "null", "nostats", "badstats", "min only"}},
		{hOp("lessThan", lit("1"), lit("2")), []string{"1..3", "3..7", "5..5", "5..5+null", "null", "nostats", "badstats", "min only"}},
		{hOp("equal", lit("1"), lit("2")), []string{}},
		{hOp("equal", n, n), []string{"1..3", "3..7", "5..5", "5..5+null", "null", "nostats", "badstats", "min only"}},
	}
	for _, tt := range tests {
		t.Run(tt.hint.String(), func(t *testing.T) {
			t.Parallel()
			if got := kept(t, tt.hint.String(), columns, opsFiles); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHintComparesNumbersNotText(t *testing.T) {
	t.Parallel()
	columns := map[string]hintColumn{
		"n": {Physical: "n", Type: "integer", Partition: true},
		"x": {Physical: "x", Type: "double"},
		"m": {Physical: "m", Type: "long"},
	}
	files := []namedFile{
		{"n=9", hintFile{PartitionValues: map[string]*string{"n": hStr("9")}}},
		{"n=10", hintFile{PartitionValues: map[string]*string{"n": hStr("10")}}},
		{"n=-3", hintFile{PartitionValues: map[string]*string{"n": hStr("-3")}}},
	}
	if got, want := kept(t, hOp("greaterThan", hCol("n", "int"), hLit("9", "int")).String(), columns, files), []string{"n=10"}; !slices.Equal(got, want) {
		t.Errorf("n > 9 kept %v, want %v", got, want)
	}
	if got, want := kept(t, hOp("lessThan", hCol("n", "int"), hLit("10", "int")).String(), columns, files), []string{"n=9", "n=-3"}; !slices.Equal(got, want) {
		t.Errorf("n < 10 kept %v, want %v", got, want)
	}
	stats := []namedFile{
		{"x 9..10", hintFile{Stats: `{"numRecords":2,"minValues":{"x":9.0,"m":9},"maxValues":{"x":10.0,"m":10},"nullCount":{"x":0,"m":0}}`}},
		{"x 100..200", hintFile{Stats: `{"numRecords":2,"minValues":{"x":1e2,"m":100},"maxValues":{"x":2e2,"m":200},"nullCount":{"x":0,"m":0}}`}},
	}
	// As text, "9" > "10" and "100" < "9".
	if got, want := kept(t, hOp("greaterThan", hCol("x", "double"), hLit("11", "double")).String(), columns, stats), []string{"x 100..200"}; !slices.Equal(got, want) {
		t.Errorf("x > 11 kept %v, want %v", got, want)
	}
	if got, want := kept(t, hOp("lessThan", hCol("m", "long"), hLit("90", "long")).String(), columns, stats), []string{"x 9..10"}; !slices.Equal(got, want) {
		t.Errorf("m < 90 kept %v, want %v", got, want)
	}
}

func TestHintNullPartitionValues(t *testing.T) {
	t.Parallel()
	columns := map[string]hintColumn{
		"d": {Physical: "d", Type: "date", Partition: true},
		"s": {Physical: "s", Type: "string", Partition: true},
	}
	files := []namedFile{
		{"value", hintFile{PartitionValues: map[string]*string{"d": hStr("2021-01-01"), "s": hStr("a")}}},
		{"nil", hintFile{PartitionValues: map[string]*string{"d": nil, "s": nil}}},
		{"empty", hintFile{PartitionValues: map[string]*string{"d": hStr(""), "s": hStr("")}}},
		{"absent", hintFile{PartitionValues: map[string]*string{}}},
		{"bad", hintFile{PartitionValues: map[string]*string{"d": hStr("01/01/2021"), "s": hStr("z")}}},
	}
	d, s := hCol("d", "date"), hCol("s", "string")
	tests := []struct {
		hint hn
		want []string
	}{
		// A null compared is kept (unknown); "" is null for a date.
		{hOp("equal", d, hLit("2021-01-02", "date")), []string{"nil", "empty", "absent", "bad"}},
		{hOp("not", hOp("equal", d, hLit("2021-01-01", "date"))), []string{"nil", "empty", "absent", "bad"}},
		{hOp("isNull", d), []string{"nil", "empty", "absent"}},
		{hOp("not", hOp("isNull", d)), []string{"value", "absent", "bad"}},
		// "" of a string column may be an empty string or a null.
		{hOp("isNull", s), []string{"nil", "empty", "absent"}},
		{hOp("not", hOp("isNull", s)), []string{"value", "empty", "absent", "bad"}},
		{hOp("equal", s, hLit("", "string")), []string{"nil", "empty", "absent"}},
	}
	for _, tt := range tests {
		t.Run(tt.hint.String(), func(t *testing.T) {
			t.Parallel()
			if got := kept(t, tt.hint.String(), columns, files); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHintColumnMapping(t *testing.T) {
	t.Parallel()
	columns := map[string]hintColumn{
		"Region":   {Physical: "col-9b2c", Type: "string", Partition: true},
		"Customer": {Physical: "col-5f1a", Type: "long"},
		"addr.zip": {Physical: "col-a1.col-b2", Type: "string"},
	}
	files := []namedFile{
		{"eu", hintFile{
			PartitionValues: map[string]*string{"col-9b2c": hStr("eu")},
			Stats:           `{"numRecords":2,"minValues":{"col-5f1a":10,"col-a1":{"col-b2":"10115"}},"maxValues":{"col-5f1a":20,"col-a1":{"col-b2":"10117"}},"nullCount":{"col-5f1a":0,"col-a1":{"col-b2":0}}}`,
		}},
		{"us", hintFile{
			PartitionValues: map[string]*string{"col-9b2c": hStr("us")},
			Stats:           `{"numRecords":2,"minValues":{"col-5f1a":30,"col-a1":{"col-b2":"90210"}},"maxValues":{"col-5f1a":40,"col-a1":{"col-b2":"94105"}},"nullCount":{"col-5f1a":0,"col-a1":{"col-b2":0}}}`,
		}},
		// Keyed by logical names: nothing can be judged, so it stays.
		{"logical keys", hintFile{
			PartitionValues: map[string]*string{"Region": hStr("xx")},
			Stats:           `{"numRecords":2,"minValues":{"Customer":1},"maxValues":{"Customer":1},"nullCount":{"Customer":0}}`,
		}},
	}
	tests := []struct {
		hint hn
		want []string
	}{
		{hOp("equal", hCol("region", "string"), hLit("eu", "string")), []string{"eu", "logical keys"}},
		{hOp("greaterThan", hCol("CUSTOMER", "long"), hLit("25", "long")), []string{"us", "logical keys"}},
		{hOp("lessThan", hCol("customer", "int"), hLit("25", "int")), []string{"eu", "logical keys"}},
		{hOp("equal", hCol("addr.zip", "string"), hLit("94105", "string")), []string{"us", "logical keys"}},
		{hOp("isNull", hCol("Addr.Zip", "string")), []string{"logical keys"}},
	}
	for _, tt := range tests {
		t.Run(tt.hint.String(), func(t *testing.T) {
			t.Parallel()
			if got := kept(t, tt.hint.String(), columns, files); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHintTimestampsAndFloats(t *testing.T) {
	t.Parallel()
	columns := map[string]hintColumn{
		"ts":  {Physical: "ts", Type: "timestamp"},
		"pts": {Physical: "pts", Type: "timestamp", Partition: true},
		"ntz": {Physical: "ntz", Type: "timestamp_ntz"},
		"x":   {Physical: "x", Type: "double"},
		"f":   {Physical: "f", Type: "float"},
	}
	files := []namedFile{{"f", hintFile{
		PartitionValues: map[string]*string{"pts": hStr("2021-01-01 00:00:00")},
		Stats: `{"numRecords":3,` +
			`"minValues":{"ts":"2021-01-01T00:00:00.000Z","ntz":"2021-01-01T00:00:00.000","x":-1.5,"f":0.1},` +
			`"maxValues":{"ts":"2021-01-01T10:00:00.000+01:00","ntz":"2021-01-01T00:00:00.000","x":2.25,"f":0.1},` +
			`"nullCount":{"ts":0,"ntz":0,"x":0,"f":0}}`,
	}}, {"iso", hintFile{
		PartitionValues: map[string]*string{"pts": hStr("2021-01-01T00:00:00.000001Z")},
	}}}
	ts, pts := hCol("ts", "timestamp"), hCol("pts", "timestamp")
	tsLit := func(v string) hn { return hLit(v, "timestamp") }
	x, f, fd := hCol("x", "double"), hCol("f", "float"), hCol("f", "double")
	tests := []struct {
		hint hn
		want []string
	}{
		// ts holds 2021-01-01T00:00Z to 09:00:00.000999Z (stats are cut to ms).
		{hOp("greaterThan", ts, tsLit("2021-01-01T09:00:00.0005Z")), []string{"f", "iso"}},
		{hOp("greaterThan", ts, tsLit("2021-01-01T09:00:00.001Z")), []string{"iso"}},
		{hOp("greaterThanOrEqual", ts, tsLit("2021-01-01T10:00:00+01:00")), []string{"f", "iso"}},
		{hOp("greaterThan", ts, tsLit("2021-01-01T09:30:00Z")), []string{"iso"}},
		// A writer may round rather than cut: a millisecond below min too.
		{hOp("lessThan", ts, tsLit("2021-01-01T01:00:00+01:00")), []string{"f", "iso"}},
		{hOp("lessThan", ts, tsLit("2020-12-31T23:59:59.998Z")), []string{"iso"}},
		{hOp("lessThan", ts, tsLit("2020-12-31T19:00:00.001-05:00")), []string{"f", "iso"}},
		{hOp("equal", ts, tsLit("2021-01-01 05:00:00Z")), []string{"f", "iso"}},
		// A partition timestamp without an offset may be in any zone.
		{hOp("equal", pts, tsLit("2021-01-01T12:00:00Z")), []string{"f"}},
		{hOp("equal", pts, tsLit("2021-01-02T19:00:00Z")), []string{}},
		{hOp("equal", pts, tsLit("2021-01-01T00:00:00Z")), []string{"f"}},
		{hOp("greaterThan", pts, tsLit("2021-01-01T00:00:00Z")), []string{"f", "iso"}},
		{hOp("not", hOp("equal", pts, tsLit("2021-01-01T00:00:00.000001Z"))), []string{"f"}},
		// A TIMESTAMP_NTZ column is never compared with an instant.
		{hOp("greaterThan", hCol("ntz", "timestamp"), tsLit("2030-01-01T00:00:00Z")), []string{"f", "iso"}},
		{hOp("lessThan", x, hLit("-1.5", "double")), []string{"iso"}},
		{hOp("lessThanOrEqual", x, hLit("-1.5", "double")), []string{"f", "iso"}},
		{hOp("greaterThan", x, hLit("2.25", "double")), []string{"iso"}},
		{hOp("greaterThan", x, hLit("2.2499", "double")), []string{"f", "iso"}},
		{hOp("equal", x, hLit("1e0", "double")), []string{"f", "iso"}},
		{hOp("greaterThan", hCol("x", "float"), hLit("1e300", "float")), []string{"iso"}}, // or +Inf as float32
		{hOp("greaterThan", x, hLit("1e300", "double")), []string{"iso"}},
		// f holds float32(0.1) = 0.10000000149…: above the double 0.1,
		// equal to it for numpy, which rounds the literal to float32.
		{hOp("lessThanOrEqual", fd, hLit("0.1", "double")), []string{"f", "iso"}},
		{hOp("greaterThan", fd, hLit("0.1", "double")), []string{"f", "iso"}},
		{hOp("greaterThan", fd, hLit("0.1000001", "double")), []string{"iso"}},
		{hOp("lessThan", fd, hLit("0.0999999", "double")), []string{"iso"}},
		{hOp("equal", f, hLit("0.1", "float")), []string{"f", "iso"}},
		// 0.1 may mean the double, which f's float32(0.1) is not.
		{hOp("not", hOp("equal", f, hLit("0.1", "float"))), []string{"f", "iso"}},
		{hOp("not", hOp("equal", f, hLit("0.5", "float"))), []string{"f", "iso"}},
		{hOp("equal", f, hLit("0.2", "float")), []string{"iso"}},
	}
	for _, tt := range tests {
		t.Run(tt.hint.String(), func(t *testing.T) {
			t.Parallel()
			if got := kept(t, tt.hint.String(), columns, files); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHintThreeValuedLogic(t *testing.T) {
	t.Parallel()
	columns := map[string]hintColumn{
		"date": {Physical: "date", Type: "date", Partition: true},
		"id":   {Physical: "id", Type: "long"},
		"s":    {Physical: "s", Type: "string"},
	}
	file := func(date, stats string) hintFile {
		return hintFile{PartitionValues: map[string]*string{"date": hStr(date)}, Stats: stats}
	}
	files := []namedFile{
		{"d1 no stats", file("2021-01-01", "")},
		{"d3 id 5", file("2021-01-03", `{"numRecords":2,"minValues":{"id":5,"s":"m"},"maxValues":{"id":5,"s":"m`+"\uFFFD"+`"},"nullCount":{"id":0,"s":0}}`)},
		{"d3 id 5 + null", file("2021-01-03", `{"numRecords":2,"minValues":{"id":5},"maxValues":{"id":5},"nullCount":{"id":1}}`)},
		{"d3 id 1..9", file("2021-01-03", `{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}`)},
		{"d3 id null", file("2021-01-03", `{"numRecords":2,"nullCount":{"id":2}}`)},
		{"d3 wide", file("2021-01-03", `{"numRecords":2,"minValues":{"id":5},"maxValues":{"id":5},"nullCount":{"id":0},"tightBounds":false}`)},
	}
	date3 := hOp("equal", hCol("date", "date"), hLit("2021-01-03", "date"))
	id := hCol("id", "long")
	idIs5 := hOp("equal", id, hLit("5", "long"))
	all := []string{"d1 no stats", "d3 id 5", "d3 id 5 + null", "d3 id 1..9", "d3 id null", "d3 wide"}
	tests := []struct {
		name string
		hint hn
		want []string
	}{
		{"and(false, unknown) = false", hOp("and", date3, hOp("greaterThan", id, hLit("0", "long"))),
			[]string{"d3 id 5", "d3 id 5 + null", "d3 id 1..9", "d3 wide"}},
		{"or(false, unknown) = unknown", hOp("or", date3, hOp("greaterThan", id, hLit("6", "long"))),
			all},
		{"or(true, x) = true", hOp("or", hOp("not", date3), hOp("greaterThan", id, hLit("6", "long"))),
			[]string{"d1 no stats", "d3 id 1..9"}},
		{"not(and(false, unknown))", hOp("not", hOp("and", hOp("not", date3), hOp("greaterThan", id, hLit("0", "long")))),
			all},
		{"not(id = 5): null rows make it true", hOp("not", idIs5),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id 1..9", "d3 id null", "d3 wide"}},
		{"not(not(id = 5))", hOp("not", hOp("not", idIs5)),
			[]string{"d1 no stats", "d3 id 5", "d3 id 5 + null", "d3 id 1..9", "d3 wide"}},
		{"not(id < 10)", hOp("not", hOp("lessThan", id, hLit("10", "long"))),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id null", "d3 wide"}},
		{"not(or(id = 5, id > 8))", hOp("not", hOp("or", idIs5, hOp("greaterThan", id, hLit("8", "long")))),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id 1..9", "d3 id null", "d3 wide"}},
		{"not(and(id = 5, date = 3))", hOp("not", hOp("and", idIs5, date3)),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id 1..9", "d3 id null", "d3 wide"}},
		{"isNull(id)", hOp("isNull", id),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id null", "d3 wide"}},
		{"not(isNull(id))", hOp("not", hOp("isNull", id)),
			[]string{"d1 no stats", "d3 id 5", "d3 id 5 + null", "d3 id 1..9", "d3 wide"}},
		{"or(isNull(id), id = 5)", hOp("or", hOp("isNull", id), idIs5),
			[]string{"d1 no stats", "d3 id 5", "d3 id 5 + null", "d3 id 1..9", "d3 id null", "d3 wide"}},
		{"and(not(isNull(id)), id <> 5)", hOp("and", hOp("not", hOp("isNull", id)), hOp("not", idIs5)),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id 1..9", "d3 wide"}},
		// "m\uFFFD" may be a cut maximum of "m🙂…", which sorts above it.
		{"string max capped with U+FFFD", hOp("greaterThan", hCol("s", "string"), hLit("m\uFFFD", "string")),
			all},
		{"string above max", hOp("greaterThan", hCol("s", "string"), hLit("n", "string")),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id 1..9", "d3 id null", "d3 wide"}},
		{"string below min", hOp("lessThan", hCol("s", "string"), hLit("m", "string")),
			[]string{"d1 no stats", "d3 id 5 + null", "d3 id 1..9", "d3 id null", "d3 wide"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := kept(t, tt.hint.String(), columns, files); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

// The filter must keep every file that holds a row satisfying the hint,
// whether a null compared is null (SQL) or false (pandas). Random files
// with real rows, their exact stats and random hints check that.
func TestHintRandomSoundness(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	columns := map[string]hintColumn{
		"i": {Physical: "col-i", Type: "long"},
		"s": {Physical: "col-s", Type: "string"},
		"d": {Physical: "col-d", Type: "date", Partition: true},
		"t": {Physical: "col-t", Type: "timestamp"},
	}
	type row struct {
		i *int64
		s *string
		t *int64 // µs since the epoch
	}
	type file struct {
		d    *int64 // days, the partition value
		rows []row
		hintFile
	}
	day := func(n int64) string { return time.Unix(n*86400, 0).UTC().Format(time.DateOnly) }
	strs := []string{"", "a", "ab", "b", "ba", "c"}
	// Timestamps within 5 ms, so that stats cut to milliseconds matter,
	// written in assorted zones.
	t0 := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -5*3600-1800)}
	stamp := func(us int64, layout string) string {
		return time.UnixMicro(us).In(zones[r.IntN(len(zones))]).Format(layout)
	}
	var files []file
	for range 300 {
		var f file
		if r.IntN(5) > 0 {
			d := int64(r.IntN(4))
			f.d = &d
		}
		for range r.IntN(4) {
			var w row
			if r.IntN(4) > 0 {
				v := int64(r.IntN(9) - 4)
				w.i = &v
			}
			if r.IntN(4) > 0 {
				w.s = &strs[r.IntN(len(strs))]
			}
			if r.IntN(4) > 0 {
				v := t0 + int64(r.IntN(5000))
				w.t = &v
			}
			f.rows = append(f.rows, w)
		}
		f.PartitionValues = map[string]*string{"col-d": nil}
		if f.d != nil {
			f.PartitionValues["col-d"] = hStr(day(*f.d))
		}
		if r.IntN(6) > 0 {
			minV, maxV, nulls := map[string]any{}, map[string]any{}, map[string]any{}
			nulls["col-i"], nulls["col-s"], nulls["col-t"] = 0, 0, 0
			var tMin, tMax *int64
			for _, w := range f.rows {
				if w.i == nil {
					nulls["col-i"] = nulls["col-i"].(int) + 1
				} else {
					if v, ok := minV["col-i"]; !ok || *w.i < v.(int64) {
						minV["col-i"] = *w.i
					}
					if v, ok := maxV["col-i"]; !ok || *w.i > v.(int64) {
						maxV["col-i"] = *w.i
					}
				}
				if w.t == nil {
					nulls["col-t"] = nulls["col-t"].(int) + 1
				} else {
					if tMin == nil || *w.t < *tMin {
						tMin = w.t
					}
					if tMax == nil || *w.t > *tMax {
						tMax = w.t
					}
				}
				if w.s == nil {
					nulls["col-s"] = nulls["col-s"].(int) + 1
				} else {
					if v, ok := minV["col-s"]; !ok || *w.s < v.(string) {
						minV["col-s"] = *w.s
					}
					if v, ok := maxV["col-s"]; !ok || *w.s > v.(string) {
						maxV["col-s"] = *w.s
					}
				}
			}
			if tMin != nil { // as Delta writes them: cut to milliseconds
				minV["col-t"] = stamp(*tMin, "2006-01-02T15:04:05.000Z07:00")
				maxV["col-t"] = stamp(*tMax, "2006-01-02T15:04:05.000Z07:00")
			}
			stats := map[string]any{"numRecords": len(f.rows), "minValues": minV, "maxValues": maxV}
			if r.IntN(4) > 0 {
				stats["nullCount"] = nulls
			}
			b, _ := json.Marshal(stats)
			f.Stats = string(b)
		}
		files = append(files, f)
	}

	// A hint and its row-level meaning: 1 true, 0 false, -1 null.
	type pred struct {
		hint hn
		eval func(w row, d *int64, nullIsFalse bool) int
	}
	cmpResult := func(op string, c int) bool {
		switch op {
		case "equal":
			return c == 0
		case "lessThan":
			return c < 0
		case "lessThanOrEqual":
			return c <= 0
		case "greaterThan":
			return c > 0
		}
		return c >= 0
	}
	ops := []string{"equal", "lessThan", "lessThanOrEqual", "greaterThan", "greaterThanOrEqual"}
	nullOr := func(nullIsFalse bool) int {
		if nullIsFalse {
			return 0
		}
		return -1
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	var gen func(depth int) pred
	gen = func(depth int) pred {
		k := r.IntN(9)
		if depth >= 3 {
			k = r.IntN(4)
		}
		switch k {
		case 0, 1, 2: // comparison, column on either side
			op := ops[r.IntN(len(ops))]
			var colHint, litHint hn
			var value func(w row, d *int64) (int, bool) // compare(value, literal)
			switch r.IntN(4) {
			case 3:
				l := t0 + int64(r.IntN(5200)-100)
				colHint, litHint = hCol("t", "timestamp"), hLit(stamp(l, time.RFC3339Nano), "timestamp")
				value = func(w row, _ *int64) (int, bool) {
					if w.t == nil {
						return 0, false
					}
					return cmpInt(*w.t, l), true
				}
			case 0:
				l := int64(r.IntN(11) - 5)
				colHint, litHint = hCol("i", "long"), hLit(strconv.FormatInt(l, 10), "long")
				value = func(w row, _ *int64) (int, bool) {
					if w.i == nil {
						return 0, false
					}
					return cmpInt(*w.i, l), true
				}
			case 1:
				l := strs[r.IntN(len(strs))]
				colHint, litHint = hCol("s", "string"), hLit(l, "string")
				value = func(w row, _ *int64) (int, bool) {
					if w.s == nil {
						return 0, false
					}
					return strings.Compare(*w.s, l), true
				}
			default:
				l := int64(r.IntN(6) - 1)
				colHint, litHint = hCol("d", "date"), hLit(day(l), "date")
				value = func(_ row, d *int64) (int, bool) {
					if d == nil {
						return 0, false
					}
					return cmpInt(*d, l), true
				}
			}
			flipped := r.IntN(2) == 0
			h := hOp(op, colHint, litHint)
			if flipped {
				h = hOp(op, litHint, colHint)
			}
			return pred{h, func(w row, d *int64, nullIsFalse bool) int {
				c, ok := value(w, d)
				if !ok {
					return nullOr(nullIsFalse)
				}
				if flipped {
					c = -c
				}
				return b2i(cmpResult(op, c))
			}}
		case 3: // isNull
			switch r.IntN(4) {
			case 2:
				return pred{hOp("isNull", hCol("t", "timestamp")), func(w row, _ *int64, _ bool) int { return b2i(w.t == nil) }}
			case 0:
				return pred{hOp("isNull", hCol("i", "long")), func(w row, _ *int64, _ bool) int { return b2i(w.i == nil) }}
			case 1:
				return pred{hOp("isNull", hCol("s", "string")), func(w row, _ *int64, _ bool) int { return b2i(w.s == nil) }}
			}
			return pred{hOp("isNull", hCol("d", "date")), func(_ row, d *int64, _ bool) int { return b2i(d == nil) }}
		case 4, 5: // not
			p := gen(depth + 1)
			return pred{hOp("not", p.hint), func(w row, d *int64, nf bool) int {
				v := p.eval(w, d, nf)
				if v < 0 {
					return v
				}
				return 1 - v
			}}
		}
		kids := make([]pred, 2+r.IntN(2))
		hints := make([]hn, len(kids))
		for i := range kids {
			kids[i] = gen(depth + 1)
			hints[i] = kids[i].hint
		}
		and := k%2 == 0
		op := "or"
		if and {
			op = "and"
		}
		return pred{hOp(op, hints...), func(w row, d *int64, nf bool) int {
			// Kleene: and is the minimum of false < null < true, or the maximum.
			rank := func(v int) int { return []int{1, 0, 2}[v+1] }
			best := rank(kids[0].eval(w, d, nf))
			for _, k := range kids[1:] {
				if v := rank(k.eval(w, d, nf)); and && v < best || !and && v > best {
					best = v
				}
			}
			return []int{0, -1, 1}[best]
		}}
	}

	dropped, total := 0, 0
	for range 3000 {
		p := gen(0)
		hint := p.hint.String()
		keep, skipped := compileHint(hint, columns)
		if keep == nil {
			t.Fatalf("hint %s skipped: %s", hint, skipped)
		}
		for _, f := range files {
			total++
			if keep(f.hintFile) {
				continue
			}
			dropped++
			for _, w := range f.rows {
				for _, nf := range []bool{false, true} {
					if p.eval(w, f.d, nf) == 1 {
						t.Fatalf("hint %s dropped a file with a matching row (null is false: %v)\nrow i=%v s=%v t=%v date=%v\nstats %s",
							hint, nf, deref(w.i), deref(w.s), deref(w.t), deref(f.d), f.Stats)
					}
				}
			}
		}
	}
	if dropped < total/10 {
		t.Errorf("dropped %d of %d files: the check is too weak to mean much", dropped, total)
	}
	t.Logf("dropped %d of %d files", dropped, total)
}

// The stats scanner must accept exactly the JSON that encoding/json
// accepts and cut out the same values.
func TestHintStatsScannerAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	names := []string{"id", `a"b`, "s", "é", "nested", "arr", ""}
	keys := &hintStatKeys{}
	for _, n := range names {
		keys.add(n)
	}
	valid := []string{
		`{}`,
		` {"numRecords":3} `,
		`{"numRecords":3,"minValues":{"id":1,"s":"a"},"maxValues":{"id":9,"s":"z\u00e9"},"nullCount":{"id":0,"s":2}}`,
		"{\n\t\"numRecords\" : 3 ,\r\n \"minValues\" : { \"id\" : -0 , \"s\" : \"\" } }",
		`{"minValues":{"i\u0064":5,"a\"b":1.5e-3,"\u00e9":1E+2,"":true}}`,
		`{"minValues":{"arr":[1,[2,{"x":"y"}],"z",[],{}],"id":-12.5e10,"nested":{"id":{"deep":[null]}}}}`,
		`{"minValues":null,"maxValues":"x","nullCount":[1,2],"tightBounds":false,"extra":{"minValues":{"id":7}}}`,
		`{"minValues":{"id":1},"minValues":{"s":"b"},"nullCount":{"id":1,"id":2}}`,
		`{"maxValues":{"s":"\ud83d\ude00 \/ \\ \b\f\n\r\t"},"numRecords":12345678901234567890}`,
	}
	invalid := []string{
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`,
		`{"a":-}`, `{"a":tru}`, `{"a":nul}`, "{\"a\":\"\x01\"}", `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":1} x`,
		`[1]`, `"s"`, `1`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":1 "b":2}`, `{"a":"open}`, `{'a':1}`, `{"a":1e}`,
		`{"a":+1}`, `{"a":1}}`, `{"a":{"b":1}`, `{"a\":1}`, `{a:1}`, `{"a":[}`, `{"a":-01}`, `{"a":1.5e+}`,
	}
	check := func(t *testing.T, text string) {
		t.Helper()
		var st hintStats
		ok := st.parse(text, keys, make([]string, 3*len(names)))
		var top map[string]json.RawMessage
		want := json.Unmarshal([]byte(text), &top) == nil && top != nil
		if ok != want {
			t.Fatalf("parse(%q) = %v, encoding/json says %v", text, ok, want)
		}
		if !ok {
			return
		}
		for m, field := range []string{"minValues", "maxValues", "nullCount"} {
			var ref map[string]json.RawMessage
			if raw := top[field]; len(raw) > 0 && raw[0] == '{' {
				if err := json.Unmarshal(raw, &ref); err != nil {
					t.Fatalf("%q: %v", text, err)
				}
			}
			for slot, name := range names {
				if got, want := st.slots[m*st.n+slot], string(ref[name]); got != want {
					t.Fatalf("parse(%q): %s[%q] = %q, want %q", text, field, name, got, want)
				}
			}
		}
		n, err := strconv.ParseInt(string(top["numRecords"]), 10, 64)
		if st.hasNumRecords != (err == nil) || err == nil && st.numRecords != n {
			t.Fatalf("parse(%q): numRecords %d %v", text, st.numRecords, st.hasNumRecords)
		}
		if tb, present := top["tightBounds"]; st.tight != (!present || string(tb) == "true") {
			t.Fatalf("parse(%q): tight %v", text, st.tight)
		}
	}
	for _, text := range valid {
		var v any
		if json.Unmarshal([]byte(text), &v) != nil {
			t.Fatalf("sample %q is not valid", text)
		}
		check(t, text)
	}
	for _, text := range invalid {
		check(t, text)
	}
	// Single-byte edits of the valid samples, most of them invalid.
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "{}[]:,\" \\/-+.0123456789eEtrufalsnb\x00\x1f\x7f\xc3\xa9"
	for range 20_000 {
		b := []byte(valid[r.IntN(len(valid))])
		i := r.IntN(len(b) + 1)
		c := alphabet[r.IntN(len(alphabet))]
		switch r.IntN(3) {
		case 0:
			if i < len(b) {
				b = slices.Delete(b, i, i+1)
			}
		case 1:
			b = slices.Insert(b, i, c)
		default:
			if i < len(b) {
				b[i] = c
			}
		}
		check(t, string(b))
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func deref[T any](p *T) any {
	if p == nil {
		return "null"
	}
	return *p
}

// benchHintFiles are 10,000 files of a table partitioned by date, with
// stats on eight columns as Delta writes them.
func benchHintFiles() ([]hintFile, map[string]hintColumn) {
	columns := map[string]hintColumn{
		"date":    {Physical: "date", Type: "date", Partition: true},
		"id":      {Physical: "id", Type: "long"},
		"ts":      {Physical: "ts", Type: "timestamp"},
		"name":    {Physical: "name", Type: "string"},
		"price":   {Physical: "price", Type: "double"},
		"qty":     {Physical: "qty", Type: "integer"},
		"country": {Physical: "country", Type: "string"},
		"note":    {Physical: "note", Type: "string"},
		"flag":    {Physical: "flag", Type: "boolean"},
	}
	files := make([]hintFile, 10_000)
	base := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range files {
		d := base.AddDate(0, 0, i/100).Format(time.DateOnly)
		lo, hi := base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i+1)*time.Minute)
		files[i] = hintFile{
			PartitionValues: map[string]*string{"date": hStr(d)},
			Stats: fmt.Sprintf(`{"numRecords":1000,"minValues":{"id":%d,"ts":"%s","name":"aaron","price":0.5,"qty":1,"country":"AT","note":"a note that is rather long and cut"},`+
				`"maxValues":{"id":%d,"ts":"%s","name":"zoe","price":999.25,"qty":50,"country":"US","note":"the other note that is long too"},`+
				`"nullCount":{"id":0,"ts":0,"name":3,"price":0,"qty":0,"country":0,"note":120,"flag":0}}`,
				i*1000, lo.Format("2006-01-02T15:04:05.000Z07:00"), i*1000+999, hi.Format("2006-01-02T15:04:05.000Z07:00")),
		}
	}
	return files, columns
}

func BenchmarkHintKeep10kFiles(b *testing.B) {
	files, columns := benchHintFiles()
	hints := map[string]hn{
		"partition": hOp("equal", hCol("date", "date"), hLit("2021-02-01", "date")),
		"stats": hOp("and",
			hOp("greaterThan", hCol("id", "long"), hLit("5000000", "long")),
			hOp("lessThan", hCol("ts", "timestamp"), hLit("2021-01-05T00:00:00Z", "timestamp"))),
		"both": hOp("or",
			hOp("equal", hCol("date", "date"), hLit("2021-02-01", "date")),
			hOp("and", hOp("not", hOp("isNull", hCol("note", "string"))),
				hOp("greaterThanOrEqual", hCol("price", "double"), hLit("998.5", "double")))),
	}
	for _, name := range []string{"partition", "stats", "both"} {
		hint := hints[name].String()
		b.Run(name, func(b *testing.B) {
			keep, skipped := compileHint(hint, columns)
			if keep == nil {
				b.Fatal(skipped)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n = 0
				for _, f := range files {
					if keep(f) {
						n++
					}
				}
			}
			b.ReportMetric(float64(n), "kept")
		})
	}
}
