package iceberg

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

func init() {
	addRoutes(
		route{http.MethodPost, tablePath, commitTable, writeRoute((*Server).buildCommit, (*Server).commitAnswer)},
		route{http.MethodPost, "/transactions/commit", commitAll, writeRoute((*Server).buildTransaction, noContentAnswer)},
	)
}

// commitBody is a CommitTableRequest.
type commitBody struct {
	Identifier   *identifier     `json:"identifier"`
	Requirements json.RawMessage `json:"requirements"`
	Updates      json.RawMessage `json:"updates"`
}

type transactionBody struct {
	TableChanges []commitBody `json:"table-changes"`
}

// change is one table's planned part of a commit.
type change struct {
	ref    ref
	table  *fsm.Table     // nil for a staged create (assert-create)
	base   *metadataFile  // the current metadata; nil for a staged create
	meta   table.Metadata // the metadata after the updates
	create bool
	noop   bool
}

func (s *Server) buildCommit(in *httpapi.In[commitBody]) (fsm.Command, error) {
	r, err := tableRef(in)
	if err != nil {
		return nil, err
	}
	if err := s.lockTables(in, r); err != nil {
		return nil, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return nil, err
	}
	ch, err := s.plan(in, st, r, in.Body, true)
	if err != nil {
		return nil, err
	}
	if ch.noop {
		body, err := s.commitAnswerOf(in, ch.table, ch.base)
		if err != nil {
			return nil, err
		}
		return nil, &settled{status: http.StatusOK, body: body, etag: etag(ch.base.location, modeAll)}
	}
	if ch.create {
		return s.proposeCreate(in, in.Stamp, &newTable{ref: r, location: strings.TrimRight(ch.meta.Location(), "/"),
			managed: strings.Contains(ch.meta.Location(), "/__unitystorage/"), meta: ch.meta})
	}
	return s.proposeCommit(in, in.Stamp, []*change{ch})
}

func (s *Server) buildTransaction(in *httpapi.In[transactionBody]) (fsm.Command, error) {
	w, err := warehouseParam(in)
	if err != nil {
		return nil, err
	}
	if len(in.Body.TableChanges) == 0 {
		return nil, httpapi.Invalid("A transaction needs at least one table change")
	}
	refs, err := changeRefs(w, in.Body.TableChanges)
	if err != nil {
		return nil, err
	}
	if err := s.lockTables(in, refs...); err != nil {
		return nil, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return nil, err
	}
	changes, err := s.planAll(in, st, refs, in.Body.TableChanges)
	if err != nil {
		return nil, err
	}
	changed := slices.DeleteFunc(changes, func(ch *change) bool { return ch.noop })
	if len(changed) == 0 {
		return nil, &settled{status: http.StatusNoContent}
	}
	return s.proposeCommit(in, in.Stamp, changed)
}

// changeRefs are the tables of a transaction's changes; each names its
// table once.
func changeRefs(w string, bodies []commitBody) ([]ref, error) {
	seen := map[string]bool{}
	var refs []ref
	for _, b := range bodies {
		r, err := identRef(w, b.Identifier, "identifier")
		if err != nil {
			return nil, err
		}
		key := strings.Join(append(slices.Clone(r.levels), r.name), nsSep)
		if seen[key] {
			return nil, httpapi.Invalid("A transaction names table %s twice", r.dotted())
		}
		seen[key] = true
		refs = append(refs, r)
	}
	return refs, nil
}

// planAll plans every change of a transaction, refs[i] the table of
// bodies[i].
func (s *Server) planAll(c echo.Context, st *fsm.State, refs []ref, bodies []commitBody) ([]*change, error) {
	out := make([]*change, 0, len(bodies))
	for i, b := range bodies {
		ch, err := s.plan(c, st, refs[i], b, false)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// plan resolves a table, checks the requirements against its current
// metadata and applies the updates. Only a single-table commit may
// finish a staged create (canCreate).
func (s *Server) plan(c echo.Context, st *fsm.State, r ref, b commitBody, canCreate bool) (*change, error) {
	done := s.stage(stageDecode)
	reqs, updates, err := decodeCommit(b)
	done()
	if err != nil {
		return nil, err
	}
	if !canCreate && asserts(reqs, "assert-create") {
		return nil, echo.NewHTTPError(http.StatusNotAcceptable, "A transaction cannot create a table (assert-create); commit the staged create on its own.")
	}
	ch := &change{ref: r}
	tb, err := lookupTable(st, r)
	if err != nil {
		return s.planMissing(st, ch, reqs, updates, err)
	}
	ch.table = tb
	done = s.stage(stageReadBase)
	ch.base, err = s.readMetadata(c.Request().Context(), tb.Iceberg.MetadataLocation)
	done()
	if err != nil {
		return nil, err
	}
	done = s.stage(stageRequirements)
	err = validate(reqs, ch.base.meta, r)
	done()
	if err != nil {
		return nil, err
	}
	defer s.stage(stageUpdate)()
	return ch, applyUpdates(ch, updates)
}

func decodeCommit(b commitBody) (table.Requirements, table.Updates, error) {
	var reqs table.Requirements
	var updates table.Updates
	if len(b.Requirements) == 0 || len(b.Updates) == 0 || string(b.Requirements) == "null" || string(b.Updates) == "null" {
		return nil, nil, httpapi.Invalid("A commit needs requirements and updates (arrays, possibly empty)")
	}
	if err := json.Unmarshal(b.Requirements, &reqs); err != nil {
		return nil, nil, httpapi.Invalid("Invalid requirements: %v", err)
	}
	if err := json.Unmarshal(b.Updates, &updates); err != nil {
		return nil, nil, httpapi.Invalid("Invalid updates: %v", err)
	}
	return reqs, updates, nil
}

func asserts(reqs table.Requirements, typ string) bool {
	return slices.ContainsFunc(reqs, func(r table.Requirement) bool { return r.GetType() == typ })
}

// validate checks every requirement: a failed one is 409 CommitFailed.
func validate(reqs table.Requirements, meta table.Metadata, r ref) error {
	for _, req := range reqs {
		if err := req.Validate(meta); err != nil {
			return fsm.Errf(fsm.CodeRequirementConflict, "Requirement failed for %s: %v", r.dotted(), err)
		}
	}
	return nil
}

// applyUpdates builds the new metadata: 400 for an invalid update, 409
// for a stale sequence number; nothing changed is a no-op.
func applyUpdates(ch *change, updates table.Updates) error {
	b, err := table.MetadataBuilderFromBase(ch.base.meta, ch.base.location)
	if err != nil {
		return err
	}
	for _, u := range updates {
		if err := u.Apply(b); err != nil {
			return updateError(ch.ref, err)
		}
	}
	if !b.HasChanges() {
		ch.noop = true
		return nil
	}
	ch.meta, err = b.Build()
	return updateError(ch.ref, err)
}

func updateError(r ref, err error) error {
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "sequence number"):
		return fsm.Errf(fsm.CodeRequirementConflict, "Commit failed for %s: %v", r.dotted(), err)
	}
	return httpapi.Invalid("Invalid update for %s: %v", r.dotted(), err)
}

// planMissing plans a commit to a name that is not an Iceberg table: a
// staged create's commit (assert-create) when the name is free, else the
// table's absence; assert-create over a taken name fails as a commit.
func (s *Server) planMissing(st *fsm.State, ch *change, reqs table.Requirements, updates table.Updates, err error) (*change, error) {
	_, taken := st.TableIn(ch.ref.path(), ch.ref.name)
	switch {
	case !asserts(reqs, "assert-create"):
		return nil, asTableMissing(err)
	case taken:
		return nil, fsm.Errf(fsm.CodeRequirementConflict, "Requirement failed: %s already exists", ch.ref.dotted())
	}
	return s.planCreateCommit(st, ch, reqs, updates)
}

// planCreateCommit finishes a staged create: the metadata is built from
// the updates alone.
func (s *Server) planCreateCommit(st *fsm.State, ch *change, reqs table.Requirements, updates table.Updates) (*change, error) {
	if _, err := lookupNamespace(st, ch.ref); err != nil {
		return nil, err
	}
	if len(reqs) != 1 {
		return nil, httpapi.Invalid("assert-create cannot be combined with other requirements")
	}
	b, err := table.NewMetadataBuilder(1)
	if err != nil {
		return nil, err
	}
	for _, u := range updates {
		if err := u.Apply(b); err != nil {
			return nil, updateError(ch.ref, err)
		}
	}
	if ch.meta, err = b.Build(); err != nil {
		return nil, updateError(ch.ref, err)
	}
	if _, err := storage.Normalize(ch.meta.Location()); err != nil || ch.meta.Location() == "" {
		return nil, httpapi.Invalid("A staged create needs a valid set-location update")
	}
	ch.create = true
	return ch, nil
}

// proposeCommit writes every changed table's new metadata file and builds
// the one entry that moves all their pointers.
func (s *Server) proposeCommit(c echo.Context, stamp fsm.Stamp, changes []*change) (fsm.Command, error) {
	cmd := &fsm.CommitIcebergTables{Stamp: stamp}
	for _, ch := range changes {
		tb := ch.table
		f, err := s.writeNew(c, metadataLocation(tb.Location, tb.Iceberg.MetadataVersion+1), ch.meta, ch.base)
		if err != nil {
			return nil, err
		}
		e, err := mirror(ch, f)
		if err != nil {
			return nil, err
		}
		cmd.Tables = append(cmd.Tables, e)
	}
	return cmd, nil
}

// mirror is a table's commit entry: the pointer swap, and the properties
// and location the table record mirrors when they changed.
func mirror(ch *change, f *metadataFile) (fsm.IcebergCommit, error) {
	e := fsm.IcebergCommit{Namespace: ch.table.NamespacePath(), Name: ch.table.Name,
		BaseMetadataLocation: ch.table.Iceberg.MetadataLocation, MetadataLocation: f.location}
	if props := map[string]string(ch.meta.Properties()); !maps.Equal(props, map[string]string(ch.base.meta.Properties())) {
		e.Properties = &props
	}
	if loc := strings.TrimRight(ch.meta.Location(), "/"); loc != strings.TrimRight(ch.table.Location, "/") {
		norm, err := storage.Normalize(loc)
		if err != nil {
			return e, httpapi.Invalid("Invalid set-location for %s: %v", ch.ref.dotted(), err)
		}
		e.Location = strings.TrimRight(norm, "/")
	}
	return e, nil
}

type commitResult struct {
	MetadataLocation   string              `json:"metadata-location"`
	Metadata           json.RawMessage     `json:"metadata"`
	Config             map[string]string   `json:"config,omitempty"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

func commitResponse(f *metadataFile) commitResult {
	return commitResult{MetadataLocation: f.location, Metadata: f.raw}
}

// commitAnswerOf is a commit's answer: the table's metadata, and the
// credentials of its location when the request asks for them.
func (s *Server) commitAnswerOf(c echo.Context, tb *fsm.Table, f *metadataFile) (commitResult, error) {
	out := commitResponse(f)
	config := map[string]string{}
	creds, err := s.delegate(c, tb.Location, s.operation(c, tb), config)
	if creds != nil {
		out.Config, out.StorageCredentials = config, creds
	}
	return out, err
}

// commitAnswer renders a commit (or the staged create it finished).
func (s *Server) commitAnswer(c echo.Context, res fsm.Result) error {
	defer s.stage(stageRender)()
	loc := res.Table.Iceberg.MetadataLocation
	f, err := s.readMetadata(c.Request().Context(), loc)
	if err != nil {
		return err
	}
	out, err := s.commitAnswerOf(c, res.Table, f)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(loc, modeAll))
	return writeTableResult(c, loc, f.raw, out.Config, out.StorageCredentials)
}
