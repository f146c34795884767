package deltaapi

import (
	"encoding/json"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// txBody is a Delta API table update taking part in a transaction across
// formats (package transactions): the table by catalog, schema and name,
// and the requirements and updates of the update route's body.
type txBody struct {
	Catalog string `json:"catalog"`
	Schema  string `json:"schema"`
	Name    string `json:"name"`
	updateTableRequest
}

// planTxOp plans one Delta table update as the update route would build
// it, settling a purged version's replay before it is tried.
func (s *Server) planTxOp(p *httpapi.Plan, raw json.RawMessage) (httpapi.OpRender, error) {
	var b txBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, invalid("Invalid Delta operation: %v", err)
	}
	for _, n := range []string{b.Catalog, b.Schema, b.Name} {
		if n == "" {
			return nil, invalid("A Delta operation names its table by catalog, schema and name.")
		}
	}
	cmd, err := buildUpdate(&b.updateTableRequest, true)
	if err != nil {
		return nil, err
	}
	cmd.Stamp, cmd.CatalogName, cmd.SchemaName, cmd.Name = p.Stamp, b.Catalog, b.Schema, b.Name
	s.decidePurgedReplay(p, p.State, cmd)
	planned, err := p.Add(cmd)
	if err != nil {
		return nil, err
	}
	return func(res *fsm.Result) any {
		if res == nil || res.Table == nil {
			res = &planned
		}
		return loadResponse(res.Table)
	}, nil
}
