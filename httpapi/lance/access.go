package lance

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// What a Lance request needs of its caller. An id names a namespace or a
// table, and a table's id (its namespace, then its name) is its access
// path. The batches name several tables in their bodies: each operation
// needs its own privilege.

// pathOf is the id the route names.
func pathOf(c echo.Context) ([]string, error) { return parseID(c.Param("id"), delimiter(c)), nil }

// tablePath is the table id the route names; an id too short for a
// table is refused as the handler refuses it.
func tablePath(c echo.Context) ([]string, error) {
	id, _ := pathOf(c)
	if _, _, err := tableRef(id, delimiter(c)); err != nil {
		return nil, err
	}
	return id, nil
}

// namespaceOfTable is the namespace of the table id the route names.
func namespaceOfTable(c echo.Context) ([]string, error) {
	id, err := tablePath(c)
	if err != nil {
		return nil, err
	}
	return id[:len(id)-1], nil
}

// useNeed is the need of using a namespace: USE CATALOG on a catalog,
// USE SCHEMA deeper; the root, which lists catalogs, needs only a caller.
func useNeed(id []string) []access.Need {
	switch len(id) {
	case 0:
		return nil
	case 1:
		return []access.Need{access.On(fsm.PrivUseCatalog, id...)}
	}
	return []access.Need{access.On(fsm.PrivUseSchema, id...)}
}

// namespaceUseRule is the rule of reading a namespace or listing what it
// holds (the lists then show only what the caller may see).
var namespaceUseRule = httpapi.Needs(func(c echo.Context) ([]access.Need, error) {
	id, _ := pathOf(c)
	return useNeed(id), nil
})

// namespaceCreateRule: creating a catalog takes CREATE CATALOG on the
// metastore, a namespace below one CREATE SCHEMA on its parent. Mode
// Overwrite replaces an existing namespace's properties, which takes
// its ownership too (a namespace that does not exist has no owner to
// ask).
var namespaceCreateRule = httpapi.Needs(func(c echo.Context) ([]access.Need, error) {
	id, _ := pathOf(c)
	if len(id) == 0 {
		return nil, nil // the root always exists: nothing is created
	}
	needs := []access.Need{access.On(fsm.PrivCreateSchema, id[:len(id)-1]...)}
	if len(id) == 1 {
		needs = []access.Need{access.On(fsm.PrivCreateCatalog)}
	}
	var b namespaceBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	if m, _ := mode(b.Mode, "create", "create", "existok", "overwrite"); m == "overwrite" {
		needs = append(needs, access.OwnerOf(false, id...))
	}
	return needs, nil
})

// registerNeeds: CREATE TABLE on the namespace; mode Overwrite first
// drops the table registered under the id, which takes its ownership.
func registerNeeds(c echo.Context) ([]access.Need, error) {
	id, err := tablePath(c)
	if err != nil {
		return nil, err
	}
	needs := []access.Need{access.On(fsm.PrivCreateTable, id[:len(id)-1]...)}
	var b declareBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	if m, _ := mode(b.Mode, "create", "create", "overwrite"); m == "overwrite" {
		needs = append(needs, access.OwnerOf(true, id...))
	}
	return needs, nil
}

// renameNeeds: ownership of the table, and CREATE TABLE on the namespace
// it moves into, if it moves.
func renameNeeds(c echo.Context) ([]access.Need, error) {
	id, err := tablePath(c)
	if err != nil {
		return nil, err
	}
	needs := []access.Need{access.OwnerOf(true, id...)}
	var b renameBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	if to := b.NewNamespaceID; to != nil && !slices.Equal(*to, id[:len(id)-1]) {
		needs = append(needs, access.On(fsm.PrivCreateTable, *to...))
	}
	return needs, nil
}

// batchCreateNeeds: MODIFY on the table of every entry. An entry without
// an id makes the handler refuse the whole batch.
func batchCreateNeeds(c echo.Context) ([]access.Need, error) {
	var b batchCreateBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	var needs []access.Need
	for _, e := range b.Entries {
		if e.ID != nil {
			needs = append(needs, access.OnTable(fsm.PrivModify, *e.ID...))
		}
	}
	return needs, nil
}

// batchCommitNeeds is what each operation of a batch commit needs:
// declare_table CREATE TABLE on the namespace, create_table_version and
// delete_table_versions MODIFY on the table, deregister_table its
// ownership. An operation on a table an earlier operation of the batch
// declared needs nothing more: when it runs, the caller owns that table
// (the declare made it, or failed the whole batch). An operation that
// does not decode, or names no id, makes the handler refuse the batch.
func batchCommitNeeds(c echo.Context) ([]access.Need, error) {
	var b batchCommitBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	kinds, bodies, err := httpapi.RawOps(b.Operations, opKinds)
	if err != nil {
		return nil, err
	}
	declared := map[string]bool{}
	var needs []access.Need
	for i, kind := range kinds {
		var op idBody
		if json.Unmarshal(bodies[i], &op) != nil || op.ID == nil || len(*op.ID) == 0 {
			continue
		}
		id := *op.ID
		key := strings.Join(id, "\x00")
		switch {
		case kind == "declare_table":
			declared[key] = true
			needs = append(needs, access.On(fsm.PrivCreateTable, id[:len(id)-1]...))
		case declared[key]:
			// the caller owns it by the time this operation runs
		case kind == "deregister_table":
			needs = append(needs, access.OwnerOf(true, id...))
		default:
			needs = append(needs, access.OnTable(fsm.PrivModify, id...))
		}
	}
	return needs, nil
}

// headerAPIKey is the header the Lance Namespace spec carries an API key in.
const headerAPIKey = "x-api-key"

// credential finds a request's credential where the Lance Namespace spec
// puts it: Authorization: Bearer, else the x-api-key header, else the
// body's identity (auth_token, then api_key). Headers win over the body.
func credential(c echo.Context) (string, error) {
	if tok, _ := httpapi.BearerCredential(c); tok != "" {
		return tok, nil
	}
	if key := strings.TrimSpace(c.Request().Header.Get(headerAPIKey)); key != "" {
		return key, nil
	}
	var b identityBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return "", readFailure(err)
	}
	return b.token, nil
}

// identityBody is the credential a request body's identity holds. A body
// without one in that shape holds none; whatever else is wrong with the
// body is the handler's to answer.
type identityBody struct{ token string }

func (b *identityBody) UnmarshalJSON(raw []byte) error {
	var v struct {
		Identity struct {
			APIKey    string `json:"api_key"`
			AuthToken string `json:"auth_token"`
		} `json:"identity"`
	}
	_ = json.Unmarshal(raw, &v) // a field of another type leaves it empty
	b.token = cmp.Or(strings.TrimSpace(v.Identity.AuthToken), strings.TrimSpace(v.Identity.APIKey))
	return nil
}

// readFailure is the answer for a body that could not be read whole (too
// large, or too slow): once peeked, the handler would no longer see that.
// A body that is no JSON carries no credential; the handler says why.
func readFailure(err error) error {
	var tooLarge *http.MaxBytesError
	var timeout *echo.HTTPError
	if errors.As(err, &tooLarge) || errors.As(err, &timeout) {
		return err
	}
	return nil
}
