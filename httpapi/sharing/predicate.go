package sharing

// File skipping for the query body's jsonPredicateHints (Delta Sharing
// protocol; digest §2.8.3).
//
// A hint is only a hint: the client filters the rows again, so the server
// may return more files than match but never fewer. Everything here leans
// that way. A hint that cannot be used as a whole (bad JSON, an unknown op
// or valueType, a wrong child count, a column the table lacks or of another
// type, over 1 MiB, deeper than 100 levels) is reported and not applied, so
// the caller returns every file, never an error. A part of a hint that
// cannot be judged for one file (no stats, an unparsable partition value)
// counts as "may match".
//
// Each condition is judged per file as a pair of facts: may some row make
// it true, may some row make it false. A comparison with a null value is
// taken as false here. That covers SQL, where it is null (a row whose
// condition is null is dropped just like a false one, and NOT null is still
// null), and clients that treat it as plain false. So not(x = 5) keeps a file
// whose x is 5 wherever it is not null: its null rows satisfy the negation
// for such a client. The file is kept when its root condition may be true.
//
// Values are compared as their type: integers and floats as numbers, dates
// as days, timestamps as instants, strings by bytes (the order of Spark and
// of Parquet statistics). Where a stored value is not exact it becomes a
// range that surely holds the real one: a timestamp written without an
// offset may be in any zone (±18 h), Delta's timestamp stats are cut to
// milliseconds, and an older Delta writer capped a cut string maximum with
// U+FFFD, which sorts below 4-byte UTF-8.

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// hintColumn describes one column of the table as predicates see it.
type hintColumn struct {
	Physical  string // key in partitionValues and stats (the logical name when there is no column mapping)
	Type      string // Delta primitive type name of the column: "long","integer","short","byte","string","date","timestamp","timestamp_ntz","boolean","float","double","decimal(…)" … (used to check the hint's valueType: int/long match integer types, float/double match float/double, and so on; a mismatch → the whole hint is skipped)
	Partition bool
}

// hintFile is one file as predicates see it.
type hintFile struct {
	PartitionValues map[string]*string // keyed by physical name
	Stats           string             // the add action's stats JSON, "" when absent
}

const (
	hintMaxBytes = 1 << 20 // longer hints are not applied
	hintMaxDepth = 100     // nodes on the longest path from the root to a leaf
)

// compileHint parses a jsonPredicateHints string against the table's
// columns (keyed by logical name, case-insensitive match of the hint's
// column name). It returns nil (keep every file) and a reason when the hint
// cannot be used; a non-nil filter reports whether a file may hold matching
// rows.
//
// An empty hint is no hint: nil and an empty reason. A nested field is named
// by its dotted path ("a.b" for field b of struct a); its Physical is the
// dotted path of physical names, looked up in the stats as the whole key
// first, then through nested objects. When Physical is empty the logical
// name is used. Literals are parsed here, once; the filter reads a file's
// stats at most once per call, only when the answer needs them, and is
// safe for concurrent use.
func compileHint(hint string, columns map[string]hintColumn) (keep func(hintFile) bool, skipped string) {
	if hint == "" {
		return nil, ""
	}
	if len(hint) > hintMaxBytes {
		return nil, fmt.Sprintf("hint is %d bytes, over the %d byte limit", len(hint), hintMaxBytes)
	}
	var root hintNode
	if err := json.Unmarshal([]byte(hint), &root); err != nil {
		return nil, "hint is not a JSON predicate tree: " + err.Error()
	}
	c := hintCompiler{columns: columns, keys: &hintStatKeys{}}
	expr, err := c.condition(&root, 1)
	if err != nil {
		return nil, err.Error()
	}
	return hintFilter(expr, c.keys), ""
}

// hintFilter reports whether a file may hold rows for which expr is true.
func hintFilter(expr *hintExpr, keys *hintStatKeys) func(hintFile) bool {
	return func(f hintFile) bool {
		e := hintEval{file: &f, keys: keys}
		return expr.eval(&e)&hintMayTrue != 0
	}
}

// hintNode is one node of the hint as sent.
type hintNode struct {
	Op        string     `json:"op"`
	Children  []hintNode `json:"children"`
	Name      *string    `json:"name"`
	Value     *string    `json:"value"`
	ValueType *string    `json:"valueType"`
}

// hintKind is how the values of a valueType compare.
type hintKind uint8

const (
	hintBool   hintKind = iota + 1 // hintVal.n: 0 or 1
	hintInt                        // hintVal.n
	hintFloat                      // hintVal.f, never NaN
	hintString                     // hintVal.s, by bytes
	hintDate                       // hintVal.n: days since 1970-01-01
	hintTime                       // hintVal.n: microseconds since the epoch
)

var hintValueTypes = map[string]hintKind{
	"bool": hintBool, "int": hintInt, "long": hintInt, "float": hintFloat, "double": hintFloat,
	"string": hintString, "date": hintDate, "timestamp": hintTime,
}

// hintTypeKind is the kind a hint must use for a column of Delta type t.
// f32 marks a FLOAT column, whose stats and partition values are read
// as float32 so that they are the stored value exactly. ntz marks a
// TIMESTAMP_NTZ column: its values have no zone, so comparing them with a
// hint's instant is never judged.
func hintTypeKind(t string) (k hintKind, f32, ntz, ok bool) {
	switch t = strings.ToLower(strings.TrimSpace(t)); t {
	case "boolean":
		return hintBool, false, false, true
	case "byte", "short", "integer", "long", "tinyint", "smallint", "int", "bigint":
		return hintInt, false, false, true
	case "float":
		return hintFloat, true, false, true
	case "double":
		return hintFloat, false, false, true
	case "string":
		return hintString, false, false, true
	case "date":
		return hintDate, false, false, true
	case "timestamp":
		return hintTime, false, false, true
	case "timestamp_ntz":
		return hintTime, false, true, true
	}
	if strings.HasPrefix(t, "char(") || strings.HasPrefix(t, "varchar(") {
		return hintString, false, false, true
	}
	return 0, false, false, false
}

// hintVerdict says what the rows of one file may make a condition.
type hintVerdict uint8

const (
	hintMayTrue  hintVerdict = 1
	hintMayFalse hintVerdict = 2
	hintUnknown              = hintMayTrue | hintMayFalse
)

type hintOpcode uint8

const (
	hopConst  hintOpcode = iota // konst
	hopAnd                      // kids
	hopOr                       // kids
	hopNot                      // kids[0]
	hopIsNull                   // col
	hopCmp                      // col cmp lit
)

type hintCmp uint8

const (
	hintEQ hintCmp = iota
	hintLT
	hintLE
	hintGT
	hintGE
)

var hintCmpOps = map[string]hintCmp{
	"equal": hintEQ, "lessThan": hintLT, "lessThanOrEqual": hintLE,
	"greaterThan": hintGT, "greaterThanOrEqual": hintGE,
}

// flip turns "lit op col" into "col flip(op) lit".
func (o hintCmp) flip() hintCmp {
	switch o {
	case hintLT:
		return hintGT
	case hintLE:
		return hintGE
	case hintGT:
		return hintLT
	case hintGE:
		return hintLE
	}
	return o
}

// hintVal is one typed value; which field holds it depends on the hintKind.
type hintVal struct {
	n int64
	f float64
	s string
}

func (k hintKind) cmp(a, b hintVal) int {
	switch k {
	case hintFloat:
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0
	case hintString:
		return strings.Compare(a.s, b.s)
	}
	switch {
	case a.n < b.n:
		return -1
	case a.n > b.n:
		return 1
	}
	return 0
}

// hintSpan holds every value a column may take in a file, or the one value a
// literal stands for: lo <= v <= hi. A missing bound is unbounded.
type hintSpan struct {
	lo, hi       hintVal
	hasLo, hasHi bool
}

func hintPoint(v hintVal) hintSpan { return hintSpan{lo: v, hi: v, hasLo: true, hasHi: true} }

// hintCol is a resolved column.
type hintCol struct {
	physical  string
	kind      hintKind
	f32       bool
	partition bool
	slot      int          // of physical in hintStatKeys
	nested    []hintNested // where a dotted physical name may be nested
}

// hintNested is a struct column's stats key and the rest of a dotted name.
type hintNested struct {
	slot int
	rest string
}

// hintStatKeys numbers the top-level stats keys a hint reads. A hint
// names few columns, so a slice beats a map.
type hintStatKeys struct {
	names []string // by slot
}

func (k *hintStatKeys) add(key string) int {
	if i := slices.Index(k.names, key); i >= 0 {
		return i
	}
	k.names = append(k.names, key)
	return len(k.names) - 1
}

// hintExpr is a compiled condition.
type hintExpr struct {
	op    hintOpcode
	cmp   hintCmp
	konst hintVerdict
	kids  []*hintExpr
	col   *hintCol
	lit   hintSpan
	stats bool // reads the file's stats (somewhere below)
}

// hintOperand is a compiled leaf.
type hintOperand struct {
	valueType string
	col       *hintCol // nil for a literal
	ntz       bool     // the column is TIMESTAMP_NTZ
	lit       hintSpan
	lit32     hintSpan // lit widened to hold it read as a float32
}

type hintCompiler struct {
	columns map[string]hintColumn
	folded  map[string]string // lower-cased logical name → logical name, "" when two fold alike
	keys    *hintStatKeys
}

type hintError string

func (e hintError) Error() string { return string(e) }

func hintErrorf(format string, args ...any) error { return hintError(fmt.Sprintf(format, args...)) }

// condition compiles a node that yields true or false.
func (c *hintCompiler) condition(n *hintNode, depth int) (*hintExpr, error) {
	if depth > hintMaxDepth {
		return nil, hintErrorf("hint is nested deeper than %d levels", hintMaxDepth)
	}
	switch n.Op {
	case "and", "or":
		if len(n.Children) < 2 {
			return nil, hintErrorf("%q needs at least 2 children, got %d", n.Op, len(n.Children))
		}
		e := &hintExpr{op: hopAnd}
		if n.Op == "or" {
			e.op = hopOr
		}
		for i := range n.Children {
			k, err := c.condition(&n.Children[i], depth+1)
			if err != nil {
				return nil, err
			}
			e.stats = e.stats || k.stats
			e.kids = append(e.kids, k)
		}
		// Both are commutative here, so look at partition values first:
		// they may settle the answer before the stats are parsed.
		slices.SortStableFunc(e.kids, func(a, b *hintExpr) int {
			switch {
			case a.stats == b.stats:
				return 0
			case b.stats:
				return -1
			}
			return 1
		})
		return e, nil
	case "not":
		if len(n.Children) != 1 {
			return nil, hintErrorf(`"not" needs 1 child, got %d`, len(n.Children))
		}
		k, err := c.condition(&n.Children[0], depth+1)
		if err != nil {
			return nil, err
		}
		return &hintExpr{op: hopNot, kids: []*hintExpr{k}, stats: k.stats}, nil
	case "isNull":
		if len(n.Children) != 1 {
			return nil, hintErrorf(`"isNull" needs 1 child, got %d`, len(n.Children))
		}
		a, err := c.operand(&n.Children[0], depth+1)
		if err != nil {
			return nil, err
		}
		if a.col == nil { // a literal is never null
			return &hintExpr{op: hopConst, konst: hintMayFalse}, nil
		}
		return &hintExpr{op: hopIsNull, col: a.col, stats: !a.col.partition}, nil
	case "column", "literal":
		return nil, hintErrorf("a %q leaf stands where a condition must", n.Op)
	}
	op, ok := hintCmpOps[n.Op]
	if !ok {
		return nil, hintErrorf("unknown op %q", n.Op)
	}
	if len(n.Children) != 2 {
		return nil, hintErrorf("%q needs 2 children, got %d", n.Op, len(n.Children))
	}
	a, err := c.operand(&n.Children[0], depth+1)
	if err != nil {
		return nil, err
	}
	b, err := c.operand(&n.Children[1], depth+1)
	if err != nil {
		return nil, err
	}
	if a.valueType != b.valueType {
		return nil, hintErrorf("%q compares a %s with a %s", n.Op, a.valueType, b.valueType)
	}
	if a.col == nil && b.col != nil {
		a, b, op = b, a, op.flip()
	}
	kind := hintValueTypes[a.valueType]
	if a.valueType == "float" || a.col != nil && a.col.f32 {
		// A "float" literal may mean the number as written or as a
		// float32; numpy compares a FLOAT column with a number rounded to
		// float32, Spark with the number as it is. Allow both.
		a.lit, b.lit = a.lit32, b.lit32
	}
	switch {
	case a.col == nil: // two literals
		return &hintExpr{op: hopConst, konst: hintCompare(op, kind, a.lit, b.lit, false)}, nil
	case b.col != nil, a.ntz: // two columns; a zoneless column and an instant
		return &hintExpr{op: hopConst, konst: hintUnknown}, nil
	}
	return &hintExpr{op: hopCmp, cmp: op, col: a.col, lit: b.lit, stats: !a.col.partition}, nil
}

// operand compiles a column or literal leaf.
func (c *hintCompiler) operand(n *hintNode, depth int) (hintOperand, error) {
	if depth > hintMaxDepth {
		return hintOperand{}, hintErrorf("hint is nested deeper than %d levels", hintMaxDepth)
	}
	if n.Op != "column" && n.Op != "literal" {
		if _, known := hintCmpOps[n.Op]; !known && n.Op != "and" && n.Op != "or" && n.Op != "not" && n.Op != "isNull" {
			return hintOperand{}, hintErrorf("unknown op %q", n.Op)
		}
		return hintOperand{}, hintErrorf("%q stands where a column or literal must", n.Op)
	}
	if len(n.Children) != 0 {
		return hintOperand{}, hintErrorf("a %q leaf has children", n.Op)
	}
	if n.ValueType == nil {
		return hintOperand{}, hintErrorf("a %q leaf has no valueType", n.Op)
	}
	vt := *n.ValueType
	kind, ok := hintValueTypes[vt]
	if !ok {
		return hintOperand{}, hintErrorf("unknown valueType %q", vt)
	}
	if n.Op == "literal" {
		if n.Value == nil {
			return hintOperand{}, hintErrorf("a literal has no value")
		}
		lit, ok := hintParseValue(kind, *n.Value, false, false)
		if !ok {
			return hintOperand{}, hintErrorf("literal %q is not a %s", *n.Value, vt)
		}
		lit32 := lit
		if kind == hintFloat {
			// Out of float32 range parses as ±Inf with an error: keep it.
			f, _ := strconv.ParseFloat(strings.TrimSpace(*n.Value), 32)
			lit32.lo.f, lit32.hi.f = min(lit.lo.f, f), max(lit.hi.f, f)
		}
		return hintOperand{valueType: vt, lit: lit, lit32: lit32}, nil
	}
	if n.Name == nil || *n.Name == "" {
		return hintOperand{}, hintErrorf("a column has no name")
	}
	name, col, err := c.lookup(*n.Name)
	if err != nil {
		return hintOperand{}, err
	}
	ck, f32, ntz, ok := hintTypeKind(col.Type)
	if !ok || ck != kind {
		return hintOperand{}, hintErrorf("column %q is %s, not %s", *n.Name, col.Type, vt)
	}
	physical := col.Physical
	if physical == "" {
		physical = name
	}
	hc := &hintCol{physical: physical, kind: kind, f32: f32, partition: col.Partition}
	if !col.Partition {
		hc.slot = c.keys.add(physical)
		for i := range len(physical) {
			if physical[i] == '.' {
				hc.nested = append(hc.nested, hintNested{slot: c.keys.add(physical[:i]), rest: physical[i+1:]})
			}
		}
	}
	return hintOperand{valueType: vt, ntz: ntz, col: hc}, nil
}

// lookup finds a column by its logical name, exactly or else ignoring case.
func (c *hintCompiler) lookup(name string) (string, hintColumn, error) {
	if col, ok := c.columns[name]; ok {
		return name, col, nil
	}
	if c.folded == nil {
		c.folded = make(map[string]string, len(c.columns))
		for k := range c.columns {
			l := strings.ToLower(k)
			if _, dup := c.folded[l]; dup {
				c.folded[l] = ""
			} else {
				c.folded[l] = k
			}
		}
	}
	k, ok := c.folded[strings.ToLower(name)]
	switch {
	case !ok:
		return "", hintColumn{}, hintErrorf("no column %q", name)
	case k == "":
		return "", hintColumn{}, hintErrorf("column name %q matches several columns", name)
	}
	return k, c.columns[k], nil
}

// hintCompare judges "a op b" where a and b are any values of their spans;
// mayNull adds rows where a is null, for which the comparison is false.
func hintCompare(op hintCmp, k hintKind, a, b hintSpan, mayNull bool) hintVerdict {
	// below reports whether some value >= lo may be less than (or equal
	// to, with orEqual) some value <= hi. An unbounded end always may.
	below := func(lo hintVal, hasLo bool, hi hintVal, hasHi bool, orEqual bool) bool {
		if !hasLo || !hasHi {
			return true
		}
		c := k.cmp(lo, hi)
		return c < 0 || orEqual && c == 0
	}
	var t, f bool
	switch op {
	case hintLT:
		t = below(a.lo, a.hasLo, b.hi, b.hasHi, false)
		f = below(b.lo, b.hasLo, a.hi, a.hasHi, true)
	case hintLE:
		t = below(a.lo, a.hasLo, b.hi, b.hasHi, true)
		f = below(b.lo, b.hasLo, a.hi, a.hasHi, false)
	case hintGT:
		t = below(b.lo, b.hasLo, a.hi, a.hasHi, false)
		f = below(a.lo, a.hasLo, b.hi, b.hasHi, true)
	case hintGE:
		t = below(b.lo, b.hasLo, a.hi, a.hasHi, true)
		f = below(a.lo, a.hasLo, b.hi, b.hasHi, false)
	default: // hintEQ
		t = below(a.lo, a.hasLo, b.hi, b.hasHi, true) && below(b.lo, b.hasLo, a.hi, a.hasHi, true)
		f = !(a.hasLo && a.hasHi && b.hasLo && b.hasHi &&
			k.cmp(a.lo, a.hi) == 0 && k.cmp(a.lo, b.lo) == 0 && k.cmp(b.lo, b.hi) == 0)
	}
	var v hintVerdict
	if t {
		v |= hintMayTrue
	}
	if f || mayNull {
		v |= hintMayFalse
	}
	return v
}

// hintEval is the state of judging one file.
type hintEval struct {
	file   *hintFile
	keys   *hintStatKeys
	parsed bool
	ok     bool // stats present and readable
	stats  hintStats
}

func (e *hintEval) fileStats() *hintStats {
	if !e.parsed {
		e.parsed = true
		if e.file.Stats != "" {
			e.ok = e.stats.parse(e.file.Stats, e.keys, make([]string, 3*len(e.keys.names)))
		}
	}
	if !e.ok {
		return nil
	}
	return &e.stats
}

func (x *hintExpr) eval(e *hintEval) hintVerdict {
	switch x.op {
	case hopConst:
		return x.konst
	case hopAnd:
		t, f := true, false
		for _, k := range x.kids {
			v := k.eval(e)
			t = t && v&hintMayTrue != 0
			f = f || v&hintMayFalse != 0
			if !t && f {
				break
			}
		}
		return hintVerdictOf(t, f)
	case hopOr:
		t, f := false, true
		for _, k := range x.kids {
			v := k.eval(e)
			t = t || v&hintMayTrue != 0
			f = f && v&hintMayFalse != 0
			if t && !f {
				break
			}
		}
		return hintVerdictOf(t, f)
	case hopNot:
		v := x.kids[0].eval(e)
		return hintVerdictOf(v&hintMayFalse != 0, v&hintMayTrue != 0)
	case hopIsNull:
		return x.evalIsNull(e)
	}
	return x.evalCmp(e)
}

func hintVerdictOf(t, f bool) hintVerdict {
	var v hintVerdict
	if t {
		v |= hintMayTrue
	}
	if f {
		v |= hintMayFalse
	}
	return v
}

// partitionValue reads a partition value: ok=false when it cannot be
// judged (absent, or "" of a string column, which Delta may mean as null);
// null=true for a null value.
func (c *hintCol) partitionValue(f *hintFile) (v string, null, ok bool) {
	pv, present := f.PartitionValues[c.physical]
	switch {
	case !present:
		return "", false, false
	case pv == nil:
		return "", true, true
	case *pv == "":
		return "", true, c.kind != hintString
	}
	return *pv, false, true
}

func (x *hintExpr) evalIsNull(e *hintEval) hintVerdict {
	c := x.col
	if c.partition {
		_, null, ok := c.partitionValue(e.file)
		switch {
		case !ok:
			return hintUnknown
		case null:
			return hintMayTrue
		}
		return hintMayFalse
	}
	s := e.fileStats()
	if s == nil {
		return hintUnknown
	}
	mayNull, mayValue := s.nulls(c)
	return hintVerdictOf(mayNull, mayValue)
}

func (x *hintExpr) evalCmp(e *hintEval) hintVerdict {
	c := x.col
	if c.partition {
		pv, null, ok := c.partitionValue(e.file)
		if !ok || null { // a null compared is never true, but the digest asks to keep
			return hintUnknown
		}
		v, ok := hintParseValue(c.kind, pv, c.f32, false)
		if !ok {
			return hintUnknown
		}
		return hintCompare(x.cmp, c.kind, v, x.lit, false)
	}
	s := e.fileStats()
	if s == nil {
		return hintUnknown
	}
	mayNull, mayValue := s.nulls(c)
	if !mayValue { // every row null (or no rows): all comparisons false
		return hintVerdictOf(false, mayNull)
	}
	var span hintSpan
	if raw, ok := s.raw(hintMinValues, c); ok {
		if v, ok := hintStatValue(c, raw, false); ok {
			span.lo, span.hasLo = v.lo, true
		}
	}
	if raw, ok := s.raw(hintMaxValues, c); ok {
		if v, ok := hintStatValue(c, raw, true); ok {
			span.hi, span.hasHi = v.hi, true
		}
	}
	return hintCompare(x.cmp, c.kind, span, x.lit, mayNull)
}

// nulls reports whether the file may hold a row where the column is null
// and one where it is not.
func (s *hintStats) nulls(c *hintCol) (mayNull, mayValue bool) {
	if !s.tight {
		// Wide bounds (deletion vectors): counts may include deleted rows.
		return true, true
	}
	raw, ok := s.raw(hintNullCount, c)
	if !ok {
		return true, true
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return true, true
	}
	return n > 0, !s.hasNumRecords || n != s.numRecords
}

// The three maps of the stats, as indexes into hintStats.slots.
const (
	hintMinValues = iota
	hintMaxValues
	hintNullCount
)

// hintStats is what a hint reads of an add action's stats: the raw JSON
// of each needed key of minValues, maxValues and nullCount, cut from the
// stats text without copying.
type hintStats struct {
	numRecords    int64
	hasNumRecords bool
	tight         bool     // tightBounds, true when absent
	slots         []string // [map*n+slot], "" when absent
	n             int      // number of keys
}

// parse reads stats, which must be one valid JSON object. Keys other than
// the needed ones are checked and skipped, not decoded.
func (s *hintStats) parse(stats string, keys *hintStatKeys, slots []string) bool {
	s.n, s.slots, s.tight = len(keys.names), slots, true
	p := hintScanner{s: stats}
	p.space()
	ok := p.members(func(key string) bool {
		start := p.i
		switch key {
		case "minValues":
			return s.readMap(&p, keys, hintMinValues)
		case "maxValues":
			return s.readMap(&p, keys, hintMaxValues)
		case "nullCount":
			return s.readMap(&p, keys, hintNullCount)
		case "numRecords":
			if !p.value() {
				return false
			}
			n, err := strconv.ParseInt(stats[start:p.i], 10, 64)
			s.numRecords, s.hasNumRecords = n, err == nil
			return true
		case "tightBounds":
			if !p.value() {
				return false
			}
			// Anything but true (even null) may be wide.
			s.tight = stats[start:p.i] == "true"
			return true
		}
		return p.value()
	})
	p.space()
	return ok && p.i == len(stats)
}

// readMap reads one of minValues, maxValues and nullCount into the slots.
func (s *hintStats) readMap(p *hintScanner, keys *hintStatKeys, m int) bool {
	dst := s.slots[m*s.n : (m+1)*s.n]
	clear(dst)
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return p.value()
	}
	return p.members(func(key string) bool {
		start := p.i
		if !p.value() {
			return false
		}
		for slot, name := range keys.names {
			if name == key {
				dst[slot] = p.s[start:p.i]
				break
			}
		}
		return true
	})
}

// raw is the JSON of a column's entry in map m: under its whole physical
// name, else under a dotted path through nested objects.
func (s *hintStats) raw(m int, c *hintCol) (string, bool) {
	if v := s.slots[m*s.n+c.slot]; v != "" {
		return v, true
	}
	for _, nk := range c.nested {
		if obj := s.slots[m*s.n+nk.slot]; obj != "" && obj[0] == '{' {
			if v, ok := hintNestedMember(obj, nk.rest); ok {
				return v, true
			}
		}
	}
	return "", false
}

// hintNestedMember finds path in a JSON object: as a whole key, else split
// at a dot into a key holding an object and the rest.
func hintNestedMember(obj, path string) (string, bool) {
	if v, ok := hintMember(obj, path); ok {
		return v, true
	}
	for i := range len(path) {
		if path[i] != '.' {
			continue
		}
		if sub, ok := hintMember(obj, path[:i]); ok && sub[0] == '{' {
			if v, ok := hintNestedMember(sub, path[i+1:]); ok {
				return v, true
			}
		}
	}
	return "", false
}

// hintMember is the raw JSON under key in an object (the last, if twice).
func hintMember(obj, key string) (string, bool) {
	p := hintScanner{s: obj}
	var found string
	ok := p.members(func(k string) bool {
		start := p.i
		if !p.value() {
			return false
		}
		if k == key {
			found = obj[start:p.i]
		}
		return true
	})
	return found, ok && found != ""
}

// hintScanner walks JSON text and checks it as it goes; it decodes only
// strings.
type hintScanner struct {
	s     string
	i     int
	depth int
}

const hintScanDepth = 1000

func (p *hintScanner) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// members reads an object at p.i, calling each with every key and p.i at
// its value, which each must read.
func (p *hintScanner) members(each func(key string) bool) bool {
	if p.i >= len(p.s) || p.s[p.i] != '{' || p.depth >= hintScanDepth {
		return false
	}
	p.depth++
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return true
	}
	for {
		p.space()
		key, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !each(key) {
			return false
		}
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return true
		default:
			return false
		}
	}
}

// value reads any value at p.i.
func (p *hintScanner) value() bool {
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '{':
		return p.members(func(string) bool { return p.value() })
	case c == '[':
		return p.array()
	case c == 't':
		return p.word("true")
	case c == 'f':
		return p.word("false")
	case c == 'n':
		return p.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return false
}

func (p *hintScanner) array() bool {
	if p.depth >= hintScanDepth {
		return false
	}
	p.depth++
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return true
	}
	for {
		p.space()
		if !p.value() {
			return false
		}
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			return true
		default:
			return false
		}
	}
}

func (p *hintScanner) word(w string) bool {
	if !strings.HasPrefix(p.s[p.i:], w) {
		return false
	}
	p.i += len(w)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *hintScanner) number() bool {
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// str reads a string at p.i and returns its value.
func (p *hintScanner) str() (string, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	start := p.i
	escaped := false
	for j := start + 1; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '"':
			p.i = j + 1
			if !escaped {
				return p.s[start+1 : j], true
			}
			return hintUnquote(p.s[start:p.i])
		case c == '\\':
			escaped = true
			j++ // an escaped quote does not end the string; checked on decoding
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// hintUnquote decodes a JSON string literal.
func hintUnquote(q string) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	body := q[1 : len(q)-1]
	if strings.IndexByte(body, '\\') < 0 {
		for i := 0; i < len(body); i++ {
			if body[i] < 0x20 || body[i] == '"' {
				return "", false
			}
		}
		return body, true
	}
	var s string
	if json.Unmarshal([]byte(q), &s) != nil {
		return "", false
	}
	return s, true
}

// hintStatValue reads a min (upper=false) or max stat of a column as a span
// that holds the real bound.
func hintStatValue(c *hintCol, raw string, upper bool) (hintSpan, bool) {
	if raw == "" || raw == "null" {
		return hintSpan{}, false
	}
	text := raw
	if raw[0] == '"' {
		var ok bool
		if text, ok = hintUnquote(raw); !ok {
			return hintSpan{}, false
		}
	}
	switch c.kind {
	case hintString:
		if raw[0] != '"' {
			return hintSpan{}, false
		}
		if upper && strings.HasSuffix(text, "\uFFFD") {
			// Possibly a cut maximum capped with U+FFFD, which sorts below
			// a 4-byte character that the cut may have dropped; 0xFF sorts
			// above every UTF-8 byte.
			text = strings.TrimSuffix(text, "\uFFFD") + "\xff"
		}
		return hintPoint(hintVal{s: text}), true
	case hintInt:
		if v, ok := hintParseValue(hintInt, text, false, false); ok {
			return v, true
		}
		// A writer may print an integer as 1e3 or 5.0.
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(f) {
			return hintSpan{}, false
		}
		if upper {
			f = math.Ceil(f)
		} else {
			f = math.Floor(f)
		}
		if f < -(1<<63) || f >= 1<<63 {
			return hintSpan{}, false
		}
		return hintPoint(hintVal{n: int64(f)}), true
	}
	return hintParseValue(c.kind, text, c.f32, true)
}

// hintParseValue parses a literal, a partition value or a stat of kind k.
// Floats are read as float32 when f32. A timestamp becomes a span when it
// is not exact: without an offset, or from stats (cut) with fewer than six
// fraction digits.
func hintParseValue(k hintKind, s string, f32, fromStats bool) (hintSpan, bool) {
	switch k {
	case hintBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return hintPoint(hintVal{n: 1}), true
		case "false":
			return hintPoint(hintVal{n: 0}), true
		}
	case hintInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err == nil {
			return hintPoint(hintVal{n: n}), true
		}
	case hintFloat:
		bits := 64
		if f32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
		if err == nil && !math.IsNaN(f) {
			return hintPoint(hintVal{f: f}), true
		}
	case hintString:
		return hintPoint(hintVal{s: s}), true
	case hintDate:
		t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
		if err == nil {
			return hintPoint(hintVal{n: t.Unix() / 86400}), true
		}
	case hintTime:
		lo, hi, ok := hintParseInstant(s, fromStats)
		if ok {
			return hintSpan{lo: hintVal{n: lo}, hi: hintVal{n: hi}, hasLo: true, hasHi: true}, true
		}
	}
	return hintSpan{}, false
}

var (
	hintZonedLayouts    = []string{"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05Z07"}
	hintZonelessLayouts = []string{"2006-01-02T15:04:05", time.DateOnly}
)

const hintAnyZone = 18 * 3600 * 1_000_000 // the widest UTC offset, in µs

// hintParseInstant reads an ISO-8601 timestamp ("T" or a space between date and
// time) as microseconds since the epoch: lo <= instant <= hi.
func hintParseInstant(s string, cut bool) (lo, hi int64, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	zoned := true
	t, err := hintParseLayouts(hintZonedLayouts, s)
	if err != nil {
		zoned = false
		if t, err = hintParseLayouts(hintZonelessLayouts, s); err != nil {
			return 0, 0, false
		}
	}
	lo = t.UnixMicro()
	hi = lo
	if t.Nanosecond()%1000 != 0 {
		hi++
	}
	if cut {
		// Stats may be cut (Delta: to milliseconds) or rounded at the
		// precision they were written with.
		if digits := hintFractionDigits(s); digits < 6 {
			unit := int64(1)
			for range 6 - digits {
				unit *= 10
			}
			lo -= unit - 1
			hi += unit - 1
		}
	}
	if !zoned {
		lo -= hintAnyZone
		hi += hintAnyZone
	}
	return lo, hi, true
}

func hintParseLayouts(layouts []string, s string) (time.Time, error) {
	var err error
	for _, l := range layouts {
		var t time.Time
		if t, err = time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// hintFractionDigits counts the digits of the fraction of a second in
// "2006-01-02T15:04:05.000…".
func hintFractionDigits(s string) int {
	const secondsEnd = len("2006-01-02T15:04:05")
	if len(s) <= secondsEnd || s[secondsEnd] != '.' && s[secondsEnd] != ',' {
		return 0
	}
	n := 0
	for i := secondsEnd + 1; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n++
	}
	return n
}
