package iceberg

import (
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// What the routes need of their callers (httpapi.Rule). The {prefix}
// segment is the catalog, so the Iceberg namespace [a, b] is the
// securable [prefix, a, b] and its table t is [prefix, a, b, t]; a view
// is a table. A path that does not parse is the 400 the handler would
// answer.

// The rules of the route tables: those of one securable named in the
// path, then those that read the query or the body.
var (
	useNamespace    = httpapi.NeedOn(fsm.PrivUseSchema, namespaceNamed)
	ownNamespace    = httpapi.NeedOwner(false, namespaceNamed)
	createIn        = httpapi.NeedOn(fsm.PrivCreateTable, namespaceNamed)
	selectTable     = httpapi.NeedOnTable(fsm.PrivSelect, tableNamed)
	ownTable        = httpapi.NeedOwner(true, tableNamed)
	selectView      = httpapi.NeedOnTable(fsm.PrivSelect, viewNamed)
	modifyView      = httpapi.NeedOnTable(fsm.PrivModify, viewNamed)
	ownView         = httpapi.NeedOwner(true, viewNamed)
	useParent       = httpapi.Needs(listNeeds)
	createNamespace = httpapi.Needs(createNamespaceNeeds)
	registerTable   = httpapi.Needs(registerNeeds)
	renameObject    = httpapi.Needs(renameNeeds)
	commitTable     = httpapi.Needs(commitNeeds)
	commitAll       = httpapi.Needs(transactionNeeds)
)

// securable is the path of the table or view r names.
func (r ref) securable() []string { return append(r.path(), r.name) }

func namespaceNamed(c echo.Context) ([]string, error) {
	r, err := namespaceRef(c)
	return r.path(), err
}

func tableNamed(c echo.Context) ([]string, error) {
	r, err := tableRef(c)
	return r.securable(), err
}

func viewNamed(c echo.Context) ([]string, error) {
	r, err := viewRef(c)
	return r.securable(), err
}

// useOf is the need of entering a namespace: USE CATALOG for the
// warehouse itself, USE SCHEMA below it.
func useOf(path []string) access.Need {
	if len(path) == 1 {
		return access.On(fsm.PrivUseCatalog, path...)
	}
	return access.On(fsm.PrivUseSchema, path...)
}

// listNeeds: listing a namespace's children takes USE on the parent; the
// handler shows only the children the caller may see.
func listNeeds(c echo.Context) ([]access.Need, error) {
	r, err := parentRef(c)
	if err != nil {
		return nil, err
	}
	return []access.Need{useOf(r.path())}, nil
}

// createNamespaceNeeds: CREATE SCHEMA on the parent of the new namespace
// (the warehouse for a first-level one).
func createNamespaceNeeds(c echo.Context) ([]access.Need, error) {
	var b namespaceBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	w, err := warehouseParam(c)
	if err != nil {
		return nil, err
	}
	if err := checkNamespace(b.Namespace); err != nil {
		return nil, err
	}
	parent := ref{warehouse: w, levels: b.Namespace[:len(b.Namespace)-1]}
	return []access.Need{access.On(fsm.PrivCreateSchema, parent.path()...)}, nil
}

// registerNeeds: CREATE TABLE on the namespace; an overwrite replaces
// the table of the name, which takes its ownership, as a drop does (a
// name no table holds is then allowed by access.Check).
func registerNeeds(c echo.Context) ([]access.Need, error) {
	var b registerBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	r, err := namespaceRef(c)
	if err != nil {
		return nil, err
	}
	needs := []access.Need{access.On(fsm.PrivCreateTable, r.path()...)}
	if b.Overwrite && b.Name != nil {
		r.name = *b.Name
		needs = append(needs, access.OwnerOf(true, r.securable()...))
	}
	return needs, nil
}

// renameNeeds (tables and views): ownership of the source, and CREATE
// TABLE on the destination's namespace when the object moves.
func renameNeeds(c echo.Context) ([]access.Need, error) {
	var b renameBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	w, err := warehouseParam(c)
	if err != nil {
		return nil, err
	}
	src, err := identRef(w, b.Source, "source")
	if err != nil {
		return nil, err
	}
	dst, err := identRef(w, b.Destination, "destination")
	if err != nil {
		return nil, err
	}
	needs := []access.Need{access.OwnerOf(true, src.securable()...)}
	if !slices.Equal(src.levels, dst.levels) {
		needs = append(needs, access.On(fsm.PrivCreateTable, dst.path()...))
	}
	return needs, nil
}

// commitRequirements is what the rules read of a commit: the types of
// its requirements, to tell the commit finishing a staged create.
type commitRequirements struct {
	Requirements []struct {
		Type string `json:"type"`
	} `json:"requirements"`
}

func (b commitRequirements) creates() bool {
	for _, r := range b.Requirements {
		if r.Type == "assert-create" {
			return true
		}
	}
	return false
}

// commitNeeds: MODIFY on the table; the commit finishing a staged create
// (assert-create) makes the table, which takes CREATE TABLE on its
// namespace.
func commitNeeds(c echo.Context) ([]access.Need, error) {
	var b commitRequirements
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	r, err := tableRef(c)
	if err != nil {
		return nil, err
	}
	if b.creates() {
		return []access.Need{access.On(fsm.PrivCreateTable, r.path()...)}, nil
	}
	return []access.Need{access.OnTable(fsm.PrivModify, r.securable()...)}, nil
}

// transactionNeeds: MODIFY on every table the transaction changes.
func transactionNeeds(c echo.Context) ([]access.Need, error) {
	var b struct {
		TableChanges []struct {
			Identifier *identifier `json:"identifier"`
		} `json:"table-changes"`
	}
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	w, err := warehouseParam(c)
	if err != nil {
		return nil, err
	}
	var needs []access.Need
	for _, ch := range b.TableChanges {
		r, err := identRef(w, ch.Identifier, "identifier")
		if err != nil {
			return nil, err
		}
		needs = append(needs, access.OnTable(fsm.PrivModify, r.securable()...))
	}
	return needs, nil
}
