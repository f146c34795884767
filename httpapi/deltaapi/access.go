package deltaapi

import (
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// What the Delta API's routes need of their caller (httpapi.Rule).

// tableParams is the table a route's path names.
var tableParams = httpapi.Params("catalog", "schema", "table")

// inSchema is the rule of creating a table (or staging one) in the
// schema the path names. A rename keeps its table in its schema, so
// owning the table is all a rename needs.
var (
	inSchema  = httpapi.NeedOn(fsm.PrivCreateTable, httpapi.Params("catalog", "schema"))
	ownsTable = httpapi.NeedOwner(true, tableParams)
)

func onTable(priv string) httpapi.Rule { return httpapi.NeedOnTable(priv, tableParams) }

// credentialNeeds asks of table credentials what their operation allows:
// writing the table for READ_WRITE, reading it otherwise (an operation
// that is neither is refused by the handler).
func credentialNeeds(c echo.Context) ([]access.Need, error) {
	priv := fsm.PrivSelect
	if c.QueryParam("operation") == "READ_WRITE" {
		priv = fsm.PrivModify
	}
	p, _ := tableParams(c)
	return []access.Need{access.OnTable(priv, p...)}, nil
}

// stagingNeeds applies Unity Catalog's staging ownership to a staging
// table's credentials: only the principal that staged it gets them (the
// state machine holds creating the table from it to the same rule). A
// staging table staged without authentication has no creator; creating
// a table in its schema is then what its credentials take. An id that is
// not a staging table's is left to the handler's 400 or 404.
func (s *Server) stagingNeeds(c echo.Context) ([]access.Need, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return nil, nil
	}
	st, _ := s.core.Node().StaleState()
	stg, ok := st.StagingTable(id.String())
	switch {
	case !ok:
		return nil, nil
	case stg.CreatedBy != "":
		return []access.Need{access.Self(stg.CreatedBy)}, nil
	}
	if _, ok := st.Namespace([]string{stg.CatalogName, stg.SchemaName}); ok {
		return []access.Need{access.On(fsm.PrivCreateTable, stg.CatalogName, stg.SchemaName)}, nil
	}
	return nil, adminOnly(c)
}

// adminOnly is the denial of a route to whoever is not a metastore admin
// (needs are only asked of callers who are not).
func adminOnly(c echo.Context) error {
	id, _ := httpapi.IdentityOf(c)
	return fsm.Errf(fsm.CodePermissionDenied, "Principal %s is not a metastore admin.", id.Principal)
}
