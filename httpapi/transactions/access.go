package transactions

import (
	"encoding/json"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// commitNeeds is what a transaction needs of its caller: for every
// operation, what the operation's own route would need. Updating a table,
// whatever its format, takes MODIFY on it; among Lance's operations,
// declaring a table takes CREATE TABLE on its namespace and deregistering
// one its ownership. An operation this cannot read names no table; the
// transaction then fails on it as a whole, before anything lands.
func commitNeeds(c echo.Context) ([]access.Need, error) {
	var b commitBody
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	kinds, bodies, err := httpapi.RawOps(b.Operations, Kinds)
	if err != nil {
		return nil, nil
	}
	var needs []access.Need
	for i, kind := range kinds {
		if n, ok := opNeed(kind, bodies[i]); ok {
			needs = append(needs, n)
		}
	}
	return needs, nil
}

// opNeed is the need of one operation, as the request's body shape names
// its table (see the package comment).
func opNeed(kind string, raw json.RawMessage) (access.Need, bool) {
	switch kind {
	case "delta":
		var b struct {
			Catalog string `json:"catalog"`
			Schema  string `json:"schema"`
			Name    string `json:"name"`
		}
		if json.Unmarshal(raw, &b) != nil {
			return access.Need{}, false
		}
		return modify([]string{b.Catalog, b.Schema, b.Name})
	case "iceberg":
		var b struct {
			Catalog   string   `json:"catalog"`
			Namespace []string `json:"namespace"`
			Name      string   `json:"name"`
		}
		if json.Unmarshal(raw, &b) != nil {
			return access.Need{}, false
		}
		return modify(append(append([]string{b.Catalog}, b.Namespace...), b.Name))
	case "lance":
		return lanceNeed(raw)
	}
	return access.Need{}, false
}

// lanceNeed is the need of a Lance operation: {"<operation>": {"id":
// [catalog, schema, ..., table], ...}}.
func lanceNeed(raw json.RawMessage) (access.Need, bool) {
	var op map[string]struct {
		ID []string `json:"id"`
	}
	if json.Unmarshal(raw, &op) != nil || len(op) != 1 {
		return access.Need{}, false
	}
	for kind, b := range op {
		if len(b.ID) < 3 {
			return access.Need{}, false
		}
		switch kind {
		case "declare_table":
			return access.On(fsm.PrivCreateTable, b.ID[:len(b.ID)-1]...), true
		case "deregister_table":
			return access.OwnerOf(true, b.ID...), true
		}
		return modify(b.ID)
	}
	return access.Need{}, false
}

// modify is the need of changing the table at path, when the path names
// one (a shorter one is refused by the operation's planner).
func modify(path []string) (access.Need, bool) {
	return access.OnTable(fsm.PrivModify, path...), len(path) >= 3
}
