// Package transactions serves one atomic commit across table formats:
// POST /api/2.1/unity-catalog/transactions/commit takes a list of
// operations, each a Delta API table update, an Iceberg table commit or a
// Lance operation, and lands all of them or none.
//
// Each protocol that takes part registers a planner with the core
// (httpapi.Server.AddTxPlanner) under its operation kind ("delta",
// "iceberg", "lance"). The operations are planned in order on one
// httpapi.Plan: each is checked as its own route would check it, tried on
// a working copy of the state (so a later operation sees an earlier
// one), and writes the files it needs (Iceberg metadata, Lance
// manifests) create-only. All their commands are then proposed as ONE
// raft entry (fsm.Transaction), which the state machine decides again,
// all or nothing. When the transaction fails, the answer is the failed
// operation's error, in UC REST's envelope with its index and kind in the
// ErrorInfo's metadata, and the files written for it are removed.
//
// Request:
//
//	{"operations": [
//	  {"delta":   {"catalog": "c", "schema": "s", "name": "fact", "requirements": [...], "updates": [...]}},
//	  {"iceberg": {"catalog": "c", "namespace": ["s"], "name": "dim", "requirements": [...], "updates": [...]}},
//	  {"lance":   {"create_table_version": {"id": ["c", "s", "emb"], "version": 3, "manifest_path": "..."}}}
//	]}
//
// Answer (200): {"results": [{"delta": <the table, as the Delta API's
// update answers>}, {"iceberg": {"metadata-location", "metadata"}},
// {"lance": {"create_table_version": {"version": {...}}}}]}, in order.
package transactions

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/ucrest"
)

// Prefix is where the transaction route lives, below UC REST's prefix and
// in its error envelope.
const Prefix = ucrest.Prefix + "/transactions"

// Kinds are the operation kinds a transaction may hold.
var Kinds = []string{"delta", "iceberg", "lance"}

// Register mounts the transaction route. Its requests go to the leader.
func Register(core *httpapi.Server) {
	g := core.Mount(httpapi.Group{Name: "transactions", Prefix: Prefix, Errors: ucrest.Errors(), ToLeader: true, Relay: true})
	g.POST("/commit", httpapi.Needs(commitNeeds), func(c echo.Context) error { return commit(core, c) })
}

type commitBody struct {
	Operations []map[string]json.RawMessage `json:"operations"`
}

func commit(core *httpapi.Server, c echo.Context) error {
	var b commitBody
	if _, err := httpapi.BindJSON(c, &b); err != nil {
		return err
	}
	if len(b.Operations) == 0 {
		return httpapi.Invalid("A transaction needs at least one operation.")
	}
	kinds, bodies, err := httpapi.RawOps(b.Operations, Kinds)
	if err != nil {
		return err
	}
	p, err := core.NewPlan(c)
	if err != nil {
		return err
	}
	renders, err := plan(core, p, kinds, bodies)
	if err != nil {
		p.Abort()
		return err
	}
	if _, err := core.Commit(p); err != nil {
		return err
	}
	results := p.Rendered(renders)
	for i, r := range results {
		results[i] = map[string]any{kinds[i]: r}
	}
	return c.JSON(http.StatusOK, map[string]any{"results": results})
}

// plan plans every operation in order.
func plan(core *httpapi.Server, p *httpapi.Plan, kinds []string, bodies []json.RawMessage) ([]httpapi.OpRender, error) {
	renders := make([]httpapi.OpRender, len(kinds))
	for i, kind := range kinds {
		p.Op(i, kind)
		planner, ok := core.TxPlanner(kind)
		if !ok || !slices.Contains(Kinds, kind) {
			return nil, p.Fail(httpapi.Invalid("Unknown operation kind '%s'; an operation is one of %v.", httpapi.Clip(kind), Kinds))
		}
		r, err := planner(p, bodies[i])
		if err != nil {
			return nil, p.Fail(err)
		}
		renders[i] = r
	}
	return renders, nil
}
