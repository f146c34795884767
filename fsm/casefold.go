package fsm

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	iradix "github.com/hashicorp/go-immutable-radix"
)

// Names that differ only in case. Names are kept and looked up exactly as
// given, but from RulesCaseNames on a new name (a create or a rename) may
// not differ only in case from a sibling's: engines that fold identifiers
// to lower case (Spark, Trino) could reach only one of the two. Siblings
// are the catalogs, the schemas of a catalog, the namespaces below one
// namespace, and the tables and views of one namespace (every format in
// one tree). Shares and recipients are keyed case-insensitively from the
// start (share.go), so their case twins were always refused.
//
// Case is compared as strings.EqualFold does (Unicode simple folding).

// caseTwin returns the name of a sibling under prefix (keys prefix+name;
// deeper levels are skipped a subtree at a time) that equals name but for
// case, other than name itself and except (the name a rename starts
// from). Only siblings whose first rune folds like name's are visited.
func caseTwin(txn *iradix.Txn, prefix []byte, name, except string) (string, bool) {
	var twin string
	found := func(k []byte, _ any) bool {
		sib := string(k[len(prefix):])
		if sib != name && sib != except && strings.EqualFold(sib, name) {
			twin = sib
		}
		return twin != ""
	}
	for _, lead := range foldLeads(name) {
		scope := append(slices.Clone(prefix), lead...)
		for seek := scope; ; {
			it := txn.Root().Iterator()
			it.SeekLowerBound(seek)
			next, done := walkLevel(it, scope, found)
			if twin != "" {
				return twin, true
			}
			if done {
				break
			}
			seek = next
		}
	}
	return "", false
}

// foldLeads returns every spelling of name's first rune under case
// folding (its SimpleFold orbit), name's own first.
func foldLeads(name string) []string {
	if name == "" {
		return nil
	}
	r, size := utf8.DecodeRuneInString(name)
	leads := []string{name[:size]}
	if r == utf8.RuneError {
		return leads
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		leads = append(leads, string(f))
	}
	return leads
}

// caseTwinError refuses, under RulesCaseNames, a new name in parent that
// differs only in case from a sibling's in tree, with the kind's "already
// exists" code. except is the name a rename starts from ("" for a create).
func (t *tx) caseTwinError(rules uint16, tree treeID, code Code, kind string, parent []string, name, except string) *Error {
	if rules < RulesCaseNames {
		return nil
	}
	twin, ok := caseTwin(t.tree(tree), childPrefix(parent), name, except)
	if !ok {
		return nil
	}
	return caseTwinErr(code, kind, parent, name, twin)
}

func caseTwinErr(code Code, kind string, parent []string, name, twin string) *Error {
	full := func(n string) string { return strings.Join(append(slices.Clone(parent), n), ".") }
	return Errf(code, "%s already exists: %s differs only in case from the existing %s %s",
		kind, full(name), strings.ToLower(kind), full(twin))
}

// tableTwinError is caseTwinError for the tables and views of a namespace.
func (t *tx) tableTwinError(rules uint16, namespace []string, name, except string) *Error {
	if rules < RulesCaseNames {
		return nil
	}
	twin, ok := caseTwin(t.tree(tableTree), childPrefix(namespace), name, except)
	if !ok {
		return nil
	}
	kind := "Table"
	if other, _ := t.tableIn(namespace, twin); other.IsView() {
		kind = "View"
	}
	return caseTwinErr(CodeTableExists, kind, namespace, name, twin)
}

// foldedTwinError words the refusal of a name whose case-insensitive key
// (shares, recipients) is taken by a name spelled otherwise, from
// RulesCaseNames on; under older rules, and for the same spelling, the
// plain message.
func foldedTwinError(rules uint16, code Code, kind, name, existing string) *Error {
	if rules >= RulesCaseNames && existing != name {
		return caseTwinErr(code, kind, nil, name, existing)
	}
	return Errf(code, "%s already exists: %s", kind, name)
}
