package iceberg

import (
	"encoding/json"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// txBody is an Iceberg table commit taking part in a transaction across
// formats (package transactions): the table by catalog (the warehouse),
// namespace and name, and the requirements and updates of a
// CommitTableRequest.
type txBody struct {
	Catalog      string          `json:"catalog"`
	Namespace    []string        `json:"namespace"`
	Name         string          `json:"name"`
	Requirements json.RawMessage `json:"requirements"`
	Updates      json.RawMessage `json:"updates"`
}

// planTxOp plans one table's commit as a commit of its own would: the
// requirements checked and the updates applied to the table's metadata
// in the plan's working copy, the new metadata file written create-only
// (removed if the transaction fails), and the pointer swap added to the
// plan. A commit that changes nothing adds nothing.
func (s *Server) planTxOp(p *httpapi.Plan, raw json.RawMessage) (httpapi.OpRender, error) {
	var b txBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, httpapi.Invalid("Invalid Iceberg operation: %v", err)
	}
	if err := checkLevel("Catalog", b.Catalog); err != nil {
		return nil, err
	}
	r, err := identRef(b.Catalog, &identifier{Namespace: b.Namespace, Name: b.Name}, "name")
	if err != nil {
		return nil, err
	}
	ch, err := s.plan(p, p.State, r, commitBody{Requirements: b.Requirements, Updates: b.Updates}, false)
	if err != nil {
		return nil, err
	}
	if ch.noop {
		return func(*fsm.Result) any { return commitResponse(ch.base) }, nil
	}
	f, err := s.writeMetadata(p.Request().Context(), metadataLocation(ch.table.Location, ch.table.Iceberg.MetadataVersion+1), ch.meta, ch.base)
	if err != nil {
		return nil, err
	}
	p.OnAbort(func() { s.removeFile(p.Request().Context(), f.location) })
	e, err := mirror(ch, f)
	if err != nil {
		return nil, err
	}
	if _, err := p.Add(&fsm.CommitIcebergTables{Stamp: p.Stamp, Tables: []fsm.IcebergCommit{e}}); err != nil {
		return nil, err
	}
	return func(*fsm.Result) any { return commitResponse(f) }, nil
}
