package deltalog

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// structView reads the children of a struct column by name. A nil view
// (the column is absent or not a struct) reads as all nulls. Views of
// nested structs are made once, with their parent.
type structView struct {
	arr    *array.Struct
	fields map[string]int
	subs   map[string]*structView
}

func newStructView(a arrow.Array) *structView {
	st, ok := a.(*array.Struct)
	if !ok {
		return nil
	}
	typ := st.DataType().(*arrow.StructType)
	v := &structView{arr: st, fields: make(map[string]int, typ.NumFields()), subs: map[string]*structView{}}
	for i := 0; i < typ.NumFields(); i++ {
		name := typ.Field(i).Name
		v.fields[name] = i
		if sub := newStructView(st.Field(i)); sub != nil {
			v.subs[name] = sub
		}
	}
	return v
}

// valid reports whether row i holds a struct (not null).
func (s *structView) valid(i int) bool {
	return s != nil && s.arr.IsValid(i)
}

// child returns the named child column, nil when absent.
func (s *structView) child(name string) arrow.Array {
	if s == nil {
		return nil
	}
	idx, ok := s.fields[name]
	if !ok {
		return nil
	}
	return s.arr.Field(idx)
}

func (s *structView) str(name string, i int) string { return strAt(s.child(name), i) }

func (s *structView) i64(name string, i int) (int64, bool) { return intAt(s.child(name), i) }

func (s *structView) boolean(name string, i int) bool { return boolAt(s.child(name), i) }

// sub returns the view of a nested struct, nil when absent.
func (s *structView) sub(name string) *structView {
	if s == nil {
		return nil
	}
	return s.subs[name]
}

// optI64 returns the value as a pointer, nil when null or absent.
func (s *structView) optI64(name string, i int) *int64 {
	if v, ok := s.i64(name, i); ok {
		return &v
	}
	return nil
}

func isNull(a arrow.Array, i int) bool {
	return a == nil || a.IsNull(i)
}

// strAt reads a string or binary value; "" when null or absent. Arrow's
// string values alias its buffers, so they are copied.
func strAt(a arrow.Array, i int) string {
	if isNull(a, i) {
		return ""
	}
	switch c := a.(type) {
	case *array.String:
		return strings.Clone(c.Value(i))
	case *array.LargeString:
		return strings.Clone(c.Value(i))
	case *array.StringView:
		return strings.Clone(c.Value(i))
	case *array.Binary:
		return string(c.Value(i))
	case *array.LargeBinary:
		return string(c.Value(i))
	}
	return ""
}

// intAt reads an integer value of any width; false when null or absent.
func intAt(a arrow.Array, i int) (int64, bool) {
	if isNull(a, i) {
		return 0, false
	}
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(i), true
	case *array.Int32:
		return int64(c.Value(i)), true
	case *array.Int16:
		return int64(c.Value(i)), true
	case *array.Int8:
		return int64(c.Value(i)), true
	case *array.Uint32:
		return int64(c.Value(i)), true
	case *array.Uint64:
		return int64(c.Value(i)), true
	}
	return 0, false
}

func boolAt(a arrow.Array, i int) bool {
	c, ok := a.(*array.Boolean)
	return ok && c.IsValid(i) && c.Value(i)
}

// strListAt reads a list of strings; nil when null or absent.
func strListAt(a arrow.Array, i int) []string {
	l, ok := a.(*array.List)
	if !ok || l.IsNull(i) {
		return nil
	}
	start, end := l.ValueOffsets(i)
	out := make([]string, 0, end-start)
	for j := start; j < end; j++ {
		out = append(out, strAt(l.ListValues(), int(j)))
	}
	return out
}

// mapEntries reads a map<string,string> (or a list of key/value structs)
// and calls put for each entry, with a nil value for a null one.
func mapEntries(a arrow.Array, i int, put func(k string, v *string)) bool {
	if isNull(a, i) {
		return false
	}
	keys, items, start, end, ok := mapParts(a, i)
	if !ok {
		return false
	}
	for j := int(start); j < int(end); j++ {
		var v *string
		if !isNull(items, j) {
			s := strAt(items, j)
			v = &s
		}
		put(strAt(keys, j), v)
	}
	return true
}

// mapParts returns the key and value columns and row i's entry range.
func mapParts(a arrow.Array, i int) (keys, items arrow.Array, start, end int64, ok bool) {
	switch c := a.(type) {
	case *array.Map:
		start, end = c.ValueOffsets(i)
		return c.Keys(), c.Items(), start, end, true
	case *array.List:
		kv := newStructView(c.ListValues())
		if kv == nil {
			return nil, nil, 0, 0, false
		}
		start, end = c.ValueOffsets(i)
		return kv.child("key"), kv.child("value"), start, end, true
	}
	return nil, nil, 0, 0, false
}

// nullableStrMap reads a map whose values may be null; nil when the map
// itself is null.
func nullableStrMap(a arrow.Array, i int) map[string]*string {
	var m map[string]*string
	mapEntries(a, i, func(k string, v *string) {
		if m == nil {
			m = map[string]*string{}
		}
		m[k] = v
	})
	return m
}

// strMap reads a map<string,string>, dropping null values; nil when null.
func strMap(a arrow.Array, i int) map[string]string {
	var m map[string]string
	mapEntries(a, i, func(k string, v *string) {
		if m == nil {
			m = map[string]string{}
		}
		if v != nil {
			m[k] = *v
		}
	})
	return m
}
