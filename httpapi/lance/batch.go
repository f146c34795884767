package lance

import (
	"encoding/json"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

type batchCreateBody struct {
	Entries []versionBody `json:"entries"`
}

func (s *Server) batchCreateVersions(c echo.Context) error {
	var b batchCreateBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if len(b.Entries) == 0 {
		return invalid("A batch needs at least one entry")
	}
	delim := delimiter(c)
	return s.writeBatch(c, len(b.Entries), "versions", func(p *httpapi.Plan, i int) (httpapi.OpRender, error) {
		p.Op(i, "create_table_version")
		id, err := bodyID(b.Entries[i].ID, "An entry")
		if err != nil {
			return nil, err
		}
		return s.planVersion(p, id, delim, &b.Entries[i])
	})
}

// opKinds are the operations of a batch commit.
var opKinds = []string{"declare_table", "create_table_version", "delete_table_versions", "deregister_table"}

type batchCommitBody struct {
	Operations []map[string]json.RawMessage `json:"operations"`
}

func (s *Server) batchCommit(c echo.Context) error {
	var b batchCommitBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if len(b.Operations) == 0 {
		return invalid("A batch commit needs at least one operation")
	}
	kinds, bodies, err := httpapi.RawOps(b.Operations, opKinds)
	if err != nil {
		return err
	}
	delim := delimiter(c)
	return s.writeBatch(c, len(kinds), "results", func(p *httpapi.Plan, i int) (httpapi.OpRender, error) {
		p.Op(i, kinds[i])
		render, err := s.planOp(p, kinds[i], bodies[i], delim)
		if err != nil {
			return nil, err
		}
		return func(res *fsm.Result) any { return map[string]any{kinds[i]: render(res)} }, nil
	})
}

// writeBatch plans n operations in order on one plan, commits them as
// one entry and answers {key: [each operation's answer]}.
func (s *Server) writeBatch(c echo.Context, n int, key string, plan func(p *httpapi.Plan, i int) (httpapi.OpRender, error)) error {
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) {
		renders := make([]httpapi.OpRender, n)
		for i := range n {
			r, err := plan(p, i)
			if err != nil {
				return nil, p.Fail(err)
			}
			renders[i] = r
		}
		return func(*fsm.Result) any { return map[string]any{key: p.Rendered(renders)} }, nil
	})
}

// planOp plans one operation of a batch commit.
func (s *Server) planOp(p *httpapi.Plan, kind string, body json.RawMessage, delim string) (httpapi.OpRender, error) {
	switch kind {
	case "declare_table":
		var b declareBody
		if err := decodeOp(body, &b); err != nil {
			return nil, err
		}
		id, err := bodyID(b.ID, kind)
		if err != nil {
			return nil, err
		}
		render, _, err := s.planDeclare(p, id, delim, &b, false)
		return render, err
	case "create_table_version":
		var b versionBody
		if err := decodeOp(body, &b); err != nil {
			return nil, err
		}
		id, err := bodyID(b.ID, kind)
		if err != nil {
			return nil, err
		}
		render, err := s.planVersion(p, id, delim, &b)
		if err != nil {
			return nil, err
		}
		return func(res *fsm.Result) any { return map[string]any{"version": render(res)} }, nil
	case "delete_table_versions":
		var b deleteVersionsBody
		if err := decodeOp(body, &b); err != nil {
			return nil, err
		}
		id, err := bodyID(b.ID, kind)
		if err != nil {
			return nil, err
		}
		return planDeleteVersions(p, id, delim, &b)
	case "deregister_table":
		var b idBody
		if err := decodeOp(body, &b); err != nil {
			return nil, err
		}
		id, err := bodyID(b.ID, kind)
		if err != nil {
			return nil, err
		}
		return s.planDrop(p, id, delim, false)
	}
	return nil, invalid("Unknown operation %q (one of %v)", httpapi.Clip(kind), opKinds)
}

func decodeOp(body json.RawMessage, v any) error {
	if string(body) == "null" {
		return invalid("An operation's request is null")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return invalid("Invalid operation: %v", err)
	}
	return nil
}

// planTxOp plans a Lance operation of a transaction across formats: an
// object with one of the batch commit's operations.
func (s *Server) planTxOp(p *httpapi.Plan, body json.RawMessage) (httpapi.OpRender, error) {
	var op map[string]json.RawMessage
	if err := decodeOp(body, &op); err != nil {
		return nil, err
	}
	kinds, bodies, err := httpapi.RawOps([]map[string]json.RawMessage{op}, opKinds)
	if err != nil {
		return nil, invalid("A Lance operation must have exactly one of %v", opKinds)
	}
	render, err := s.planOp(p, kinds[0], bodies[0], defaultDelimiter)
	if err != nil {
		return nil, err
	}
	return func(res *fsm.Result) any { return map[string]any{kinds[0]: render(res)} }, nil
}
