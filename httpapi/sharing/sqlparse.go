package sharing

import (
	"errors"
	"fmt"
	"strings"
)

// The parser of predicateHints' SQL (see sqlhint.go for what is
// understood). It knows a small part of Spark SQL and refuses the rest,
// including what reads differently in other dialects (adjacent string
// literals, escapes other than \\, \' and \").

// sqlTok is a token: kind 'i' a bare word, 'q' a `quoted` name, 's' a
// string, 'n' a number, 'o' an operator or punctuation.
type sqlTok struct {
	kind byte
	text string
}

// parseSQLHint parses one expression into its top-level conjuncts.
func parseSQLHint(s string) ([]*sqlExpr, error) {
	toks, err := lexSQL(s)
	if err != nil {
		return nil, err
	}
	p := &sqlParser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.i].text)
	}
	return conjuncts(e, nil), nil
}

func conjuncts(e *sqlExpr, out []*sqlExpr) []*sqlExpr {
	if e.op != "and" {
		return append(out, e)
	}
	for _, k := range e.kids {
		out = conjuncts(k, out)
	}
	return out
}

var sqlOperators = []string{"<=>", "<=", ">=", "<>", "!=", "==", "=", "<", ">", "(", ")", ",", ".", "-"}

func lexSQL(s string) ([]sqlTok, error) {
	var toks []sqlTok
	for i := 0; i < len(s); {
		c := s[i]
		var t sqlTok
		n, err := 0, error(nil)
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case isWordByte(c) && !isDigit(c):
			n = sqlSpan(s[i:], isWordByte)
			t = sqlTok{'i', s[i : i+n]}
		case c == '`':
			t.kind = 'q'
			t.text, n, err = sqlQuoted(s[i:], '`', false)
		case c == '\'' || c == '"':
			t.kind = 's'
			t.text, n, err = sqlQuoted(s[i:], c, true)
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			t.kind = 'n'
			t.text, n, err = sqlNumber(s[i:])
		default:
			t, n = sqlOperator(s[i:])
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("unexpected %q", s[i:i+1])
		}
		if t.kind == 's' && len(toks) > 0 && toks[len(toks)-1].kind == 's' {
			return nil, errors.New("adjacent string literals")
		}
		toks = append(toks, t)
		i += n
	}
	return toks, nil
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool { return c == '_' || isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' }

func sqlSpan(s string, in func(byte) bool) int {
	n := 0
	for n < len(s) && in(s[n]) {
		n++
	}
	return n
}

func sqlOperator(s string) (sqlTok, int) {
	for _, op := range sqlOperators {
		if strings.HasPrefix(s, op) {
			return sqlTok{'o', op}, len(op)
		}
	}
	return sqlTok{}, 0
}

// sqlQuoted reads a quoted string or name at s[0]: a doubled quote
// stands for itself in a name; a string knows \\, \' and \" only.
func sqlQuoted(s string, q byte, str bool) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == q && !str && i+1 < len(s) && s[i+1] == q:
			b.WriteByte(q)
			i++
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && str:
			if i+1 >= len(s) || !strings.ContainsRune(`\'"`, rune(s[i+1])) {
				return "", 0, errors.New(`a string escape other than \\, \' or \"`)
			}
			b.WriteByte(s[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("an unterminated quote")
}

// sqlNumber reads digits, a fraction, an exponent and Spark's type
// suffix (L, S, Y, D, F, BD).
func sqlNumber(s string) (string, int, error) {
	n := sqlSpan(s, isDigit)
	if n < len(s) && s[n] == '.' {
		n += 1 + sqlSpan(s[n+1:], isDigit)
	}
	if n < len(s) && s[n]|0x20 == 'e' {
		m := n + 1
		if m < len(s) && (s[m] == '+' || s[m] == '-') {
			m++
		}
		if d := sqlSpan(s[m:], isDigit); d > 0 {
			n = m + d
		}
	}
	end := n + sqlSpan(s[n:], isWordByte)
	switch strings.ToUpper(s[n:end]) {
	case "", "L", "S", "Y", "D", "F", "BD":
		return s[:end], end, nil
	}
	return "", 0, fmt.Errorf("a number %q", s[:end])
}

// sqlParser is a recursive descent over the tokens; depth bounds the
// nesting as the JSON hint's is bounded.
type sqlParser struct {
	toks  []sqlTok
	i     int
	depth int
}

func (p *sqlParser) peek() sqlTok {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return sqlTok{}
}

// word reports whether the next token is the keyword w, and takes it.
func (p *sqlParser) word(w string) bool {
	if t := p.peek(); t.kind == 'i' && strings.EqualFold(t.text, w) {
		p.i++
		return true
	}
	return false
}

// punct reports whether the next token is the operator op, and takes it.
func (p *sqlParser) punct(op string) bool {
	if t := p.peek(); t.kind == 'o' && t.text == op {
		p.i++
		return true
	}
	return false
}

func (p *sqlParser) expect(op string) error {
	if !p.punct(op) && !p.word(op) {
		return fmt.Errorf("expected %q at %q", op, p.peek().text)
	}
	return nil
}

func (p *sqlParser) enter() error {
	if p.depth++; p.depth > hintMaxDepth {
		return fmt.Errorf("nested deeper than %d levels", hintMaxDepth)
	}
	return nil
}

func (p *sqlParser) or() (*sqlExpr, error)  { return p.chain("or", p.and) }
func (p *sqlParser) and() (*sqlExpr, error) { return p.chain("and", p.not) }

// chain parses next (op next)* into one node of op.
func (p *sqlParser) chain(op string, next func() (*sqlExpr, error)) (*sqlExpr, error) {
	e, err := next()
	if err != nil {
		return nil, err
	}
	out := &sqlExpr{op: op, kids: []*sqlExpr{e}}
	for p.word(op) {
		if e, err = next(); err != nil {
			return nil, err
		}
		out.kids = append(out.kids, e)
	}
	if len(out.kids) == 1 {
		return e, nil
	}
	return out, nil
}

func (p *sqlParser) not() (*sqlExpr, error) {
	if !p.word("not") {
		return p.predicate()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	e, err := p.not()
	if err != nil {
		return nil, err
	}
	return &sqlExpr{op: "not", kids: []*sqlExpr{e}}, nil
}

var sqlComparisons = map[string]string{"=": "=", "==": "=", "<=>": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

// predicate parses an operand and what may follow it: a comparison,
// [NOT] IN, [NOT] BETWEEN, IS [NOT] NULL.
func (p *sqlParser) predicate() (*sqlExpr, error) {
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == 'o' && sqlComparisons[t.text] != "" {
		p.i++
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		return &sqlExpr{op: "cmp", cmp: sqlComparisons[t.text], kids: []*sqlExpr{left, right}}, nil
	}
	if p.word("is") {
		neg := p.word("not")
		if !p.word("null") {
			return nil, fmt.Errorf("expected NULL after IS at %q", p.peek().text)
		}
		return &sqlExpr{op: "isnull", neg: neg, kids: []*sqlExpr{left}}, nil
	}
	neg := p.word("not")
	switch {
	case p.word("in"):
		return p.inList(left, neg)
	case p.word("between"):
		return p.between(left, neg)
	case neg:
		return nil, fmt.Errorf("expected IN or BETWEEN after NOT at %q", p.peek().text)
	}
	return left, nil
}

func (p *sqlParser) inList(left *sqlExpr, neg bool) (*sqlExpr, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	e := &sqlExpr{op: "in", neg: neg, kids: []*sqlExpr{left}}
	for {
		v, err := p.operand()
		if err != nil {
			return nil, err
		}
		e.kids = append(e.kids, v)
		if !p.punct(",") {
			return e, p.expect(")")
		}
	}
}

func (p *sqlParser) between(left *sqlExpr, neg bool) (*sqlExpr, error) {
	lo, err := p.operand()
	if err != nil {
		return nil, err
	}
	if err := p.expect("and"); err != nil {
		return nil, err
	}
	hi, err := p.operand()
	if err != nil {
		return nil, err
	}
	return &sqlExpr{op: "between", neg: neg, kids: []*sqlExpr{left, lo, hi}}, nil
}

// operand parses a parenthesised expression, a literal, a CAST or a
// column.
func (p *sqlParser) operand() (*sqlExpr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	t := p.peek()
	switch {
	case p.punct("("):
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case p.punct("-"):
		if n := p.peek(); n.kind == 'n' {
			p.i++
			return &sqlExpr{op: "lit", kind: "number", text: "-" + n.text}, nil
		}
		return nil, errors.New("a minus sign not before a number")
	case t.kind == 'n' || t.kind == 's':
		p.i++
		kind := map[byte]string{'n': "number", 's': "string"}[t.kind]
		return &sqlExpr{op: "lit", kind: kind, text: t.text}, nil
	case t.kind == 'q':
		return p.column()
	case t.kind == 'i':
		return p.word0()
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}

// sqlTyped are the keywords that type the string literal after them.
var sqlTyped = map[string]string{"date": "date", "timestamp": "timestamp", "timestamp_ltz": "timestamp", "timestamp_ntz": "timestamp"}

var sqlReserved = map[string]bool{"and": true, "or": true, "not": true, "in": true, "is": true, "between": true, "as": true}

// word0 parses an operand that starts with a bare word.
func (p *sqlParser) word0() (*sqlExpr, error) {
	w := strings.ToLower(p.peek().text)
	switch {
	case w == "cast":
		p.i++
		return p.cast()
	case w == "true" || w == "false":
		p.i++
		return &sqlExpr{op: "lit", kind: "bool", text: w}, nil
	case w == "null":
		p.i++
		return &sqlExpr{op: "lit", kind: "null", text: "NULL"}, nil
	case sqlTyped[w] != "" && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == 's':
		p.i += 2
		return &sqlExpr{op: "lit", kind: sqlTyped[w], text: p.toks[p.i-1].text}, nil
	case sqlReserved[w]:
		return nil, fmt.Errorf("unexpected %q", p.peek().text)
	}
	return p.column()
}

// column parses a name: part(.part)*, where partitionValues.name is
// name (Spark's client sends partition columns so).
func (p *sqlParser) column() (*sqlExpr, error) {
	var parts []string
	for {
		t := p.peek()
		if t.kind != 'i' && t.kind != 'q' {
			return nil, fmt.Errorf("expected a column name at %q", t.text)
		}
		p.i++
		parts = append(parts, t.text)
		if !p.punct(".") {
			break
		}
	}
	switch {
	case len(parts) == 2 && strings.EqualFold(parts[0], "partitionValues"):
		parts = parts[1:]
	case len(parts) != 1:
		return nil, fmt.Errorf("a qualified or nested column %q", strings.Join(parts, "."))
	}
	return &sqlExpr{op: "col", name: parts[0]}, nil
}

// sqlTypes are the SQL type names a CAST may name, as Delta names them.
var sqlTypes = map[string]string{
	"string": "string", "int": "integer", "integer": "integer", "bigint": "long", "long": "long",
	"smallint": "short", "short": "short", "tinyint": "byte", "byte": "byte", "double": "double",
	"float": "float", "real": "float", "date": "date", "timestamp": "timestamp", "timestamp_ltz": "timestamp",
	"timestamp_ntz": "timestamp_ntz", "boolean": "boolean",
}

// cast parses CAST(column AS type) after CAST; a CAST of anything else
// is not understood.
func (p *sqlParser) cast() (*sqlExpr, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	inner, err := p.operand()
	if err != nil {
		return nil, err
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != 'i' {
		return nil, fmt.Errorf("expected a type at %q", t.text)
	}
	p.i++
	typ, known := sqlTypes[strings.ToLower(t.text)]
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if inner.op != "col" || inner.cast != "" || !known {
		return nil, fmt.Errorf("CAST of %s to %s", inner.describe(), t.text)
	}
	inner.cast = typ
	return inner, nil
}
