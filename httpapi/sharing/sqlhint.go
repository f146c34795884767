package sharing

// File skipping for the query body's predicateHints: the protocol's older,
// SQL form of a hint, a JSON array of boolean SQL expressions that are
// AND-ed together ("year = '2021'", "month IN ('1','12')").
//
// Each expression is parsed into the tree jsonPredicateHints send and
// compiled and judged by the same code (predicate.go), on partition values
// only. Like a JSON hint it is best effort and leans the same way: a
// conjunct that is not understood as a whole (a syntax this parser does
// not know, a column that is not a partition column, a literal of another
// type than the column's, a CAST to another type) is left out, which keeps
// more files, never fewer. The top-level ANDs of each expression are
// conjuncts of their own, so "year = '2021' AND value > 3" still prunes by
// year.
//
// Understood: comparisons (=, ==, <=>, <>, !=, <, <=, >, >=) between a
// partition column and a literal, either way round; [NOT] IN lists;
// [NOT] BETWEEN; IS [NOT] NULL; AND, OR, NOT and parentheses. Columns are
// bare or `quoted` names, also as partitionValues.name (as Spark's client
// sends them) and inside a CAST to the column's own type. Literals are
// 'strings' (a string compared with a column of another type is read as
// that type, as SQL casts it), numbers (123, 123L, 1.5, 1.5D), DATE '…',
// TIMESTAMP '…', TRUE and FALSE.

import (
	"fmt"
	"strings"
)

// compileSQLHints compiles predicateHints against the table's columns.
// It returns nil (keep every file) when no conjunct can be used, and the
// reasons conjuncts were left out.
func compileSQLHints(hints []string, columns map[string]hintColumn) (keep func(hintFile) bool, skipped []string) {
	size := 0
	for _, h := range hints {
		size += len(h)
	}
	if size > hintMaxBytes {
		return nil, []string{fmt.Sprintf("predicateHints are %d bytes, over the %d byte limit", size, hintMaxBytes)}
	}
	c := hintCompiler{columns: columns, keys: &hintStatKeys{}}
	root := &hintExpr{op: hopAnd}
	for _, h := range hints {
		conjuncts, err := parseSQLHint(h)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%q: %v", h, err))
			continue
		}
		for _, cj := range conjuncts {
			e, err := c.sqlCondition(cj)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%q: %v", h, err))
				continue
			}
			root.kids = append(root.kids, e)
		}
	}
	if len(root.kids) == 0 {
		return nil, skipped
	}
	return hintFilter(root, c.keys), skipped
}

// sqlCondition compiles one conjunct through the JSON hint's compiler.
func (c *hintCompiler) sqlCondition(e *sqlExpr) (*hintExpr, error) {
	n, err := c.sqlNode(e)
	if err != nil {
		return nil, err
	}
	return c.condition(n, 1)
}

// sqlExpr is a parsed SQL expression.
type sqlExpr struct {
	op   string     // "and", "or", "not", "cmp", "in", "between", "isnull", "col", "lit"
	cmp  string     // the comparison of "cmp": =, <, <=, >, >=, <> (others are normalised)
	neg  bool       // NOT IN, NOT BETWEEN, IS NOT NULL
	kids []*sqlExpr // operands and conditions, in order
	name string     // "col": the column's name
	cast string     // "col": the type of a CAST around it, lower case ("" without)
	kind string     // "lit": "string", "number", "date", "timestamp", "bool", "null"
	text string     // "lit": the value as written, unquoted
}

// sqlNode translates a condition into the JSON hint's tree.
func (c *hintCompiler) sqlNode(e *sqlExpr) (*hintNode, error) {
	switch e.op {
	case "and", "or", "not":
		return c.sqlLogical(e)
	case "isnull":
		col, err := c.sqlColumn(e.kids[0])
		if err != nil {
			return nil, err
		}
		return sqlNegate(e.neg, &hintNode{Op: "isNull", Children: []hintNode{*col}}), nil
	case "cmp":
		return c.sqlCompare(e.cmp, e.kids[0], e.kids[1])
	case "in":
		return c.sqlIn(e)
	case "between":
		return c.sqlBetween(e)
	}
	return nil, fmt.Errorf("%s is not a condition", e.describe())
}

func (c *hintCompiler) sqlLogical(e *sqlExpr) (*hintNode, error) {
	out := &hintNode{Op: e.op}
	for _, k := range e.kids {
		n, err := c.sqlNode(k)
		if err != nil {
			return nil, err
		}
		out.Children = append(out.Children, *n)
	}
	return out, nil
}

func sqlNegate(neg bool, n *hintNode) *hintNode {
	if !neg {
		return n
	}
	return &hintNode{Op: "not", Children: []hintNode{*n}}
}

var sqlCmpOps = map[string]string{"=": "equal", "<": "lessThan", "<=": "lessThanOrEqual", ">": "greaterThan", ">=": "greaterThanOrEqual"}

// sqlFlipped is the comparison read the other way round.
var sqlFlipped = map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// sqlCompare translates "a op b", one side a partition column and the
// other a literal.
func (c *hintCompiler) sqlCompare(op string, a, b *sqlExpr) (*hintNode, error) {
	if a.op != "col" {
		a, b, op = b, a, sqlFlipped[op]
	}
	return c.sqlComparison(op, a, b)
}

func (c *hintCompiler) sqlComparison(op string, colExpr, litExpr *sqlExpr) (*hintNode, error) {
	col, err := c.sqlColumn(colExpr)
	if err != nil {
		return nil, err
	}
	lit, err := sqlLiteral(litExpr, *col.ValueType)
	if err != nil {
		return nil, err
	}
	if op == "<>" {
		return sqlNegate(true, &hintNode{Op: "equal", Children: []hintNode{*col, *lit}}), nil
	}
	return &hintNode{Op: sqlCmpOps[op], Children: []hintNode{*col, *lit}}, nil
}

func (c *hintCompiler) sqlIn(e *sqlExpr) (*hintNode, error) {
	or := &hintNode{Op: "or"}
	for _, v := range e.kids[1:] {
		n, err := c.sqlComparison("=", e.kids[0], v)
		if err != nil {
			return nil, err
		}
		or.Children = append(or.Children, *n)
	}
	if len(or.Children) == 1 {
		return sqlNegate(e.neg, &or.Children[0]), nil
	}
	return sqlNegate(e.neg, or), nil
}

func (c *hintCompiler) sqlBetween(e *sqlExpr) (*hintNode, error) {
	lo, err := c.sqlComparison(">=", e.kids[0], e.kids[1])
	if err != nil {
		return nil, err
	}
	hi, err := c.sqlComparison("<=", e.kids[0], e.kids[2])
	if err != nil {
		return nil, err
	}
	return sqlNegate(e.neg, &hintNode{Op: "and", Children: []hintNode{*lo, *hi}}), nil
}

// sqlColumn resolves a column operand to a partition column's leaf.
func (c *hintCompiler) sqlColumn(e *sqlExpr) (*hintNode, error) {
	if e.op != "col" {
		return nil, fmt.Errorf("%s is not a column", e.describe())
	}
	name, col, err := c.lookup(e.name)
	if err != nil {
		return nil, err
	}
	if !col.Partition {
		return nil, fmt.Errorf("column %q is not a partition column", e.name)
	}
	vt, ok := sqlValueType(col.Type)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, which hints do not compare", e.name, col.Type)
	}
	if e.cast != "" && e.cast != strings.ToLower(col.Type) {
		return nil, fmt.Errorf("CAST of column %q (%s) to %s", e.name, col.Type, e.cast)
	}
	return &hintNode{Op: "column", Name: &name, ValueType: &vt}, nil
}

// sqlValueType is the JSON hint's valueType for a column of Delta type t.
func sqlValueType(t string) (string, bool) {
	kind, f32, _, ok := hintTypeKind(t)
	if !ok {
		return "", false
	}
	switch kind {
	case hintBool:
		return "bool", true
	case hintInt:
		return "long", true
	case hintFloat:
		if f32 {
			return "float", true
		}
		return "double", true
	case hintString:
		return "string", true
	case hintDate:
		return "date", true
	}
	return "timestamp", true
}

// sqlLiteral is a literal operand as a leaf of valueType vt, the column's:
// a string is read as the column's type (SQL casts it so); any other
// literal must be of the column's kind.
func sqlLiteral(e *sqlExpr, vt string) (*hintNode, error) {
	if e.op != "lit" {
		return nil, fmt.Errorf("%s is neither a column nor a literal", e.describe())
	}
	text, fits := e.text, e.kind == "string"
	switch vt {
	case "long":
		text, fits = sqlInteger(e)
		fits = fits || e.kind == "string"
	case "float", "double":
		if e.kind == "number" {
			text, fits = strings.TrimRight(strings.TrimSuffix(strings.ToUpper(text), "BD"), "DF"), true
		}
	case "bool", "date", "timestamp":
		fits = fits || e.kind == vt
	}
	if !fits {
		return nil, fmt.Errorf("%s compared with a %s column", e.describe(), vt)
	}
	return &hintNode{Op: "literal", Value: &text, ValueType: &vt}, nil
}

// sqlInteger is an integer literal's digits, without Spark's L, S or Y
// suffix; a string literal is passed on for the compiler to parse.
func sqlInteger(e *sqlExpr) (string, bool) {
	if e.kind != "number" {
		return e.text, false
	}
	t := strings.TrimRight(strings.ToUpper(e.text), "LSY")
	if len(e.text)-len(t) > 1 || strings.ContainsAny(t, ".E") {
		return e.text, false
	}
	return t, true
}

func (e *sqlExpr) describe() string {
	switch e.op {
	case "lit":
		return e.kind + " literal " + e.text
	case "col":
		return "column " + e.name
	}
	return "an " + strings.ToUpper(e.op) + " expression"
}
