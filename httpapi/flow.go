package httpapi

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
)

// The flows every protocol shares: a read takes the state at the
// consistency the request asks for (State); a write binds, builds a
// command, stamps it, settles what must be settled before proposing,
// proposes and answers (Write). A protocol only translates.

// State returns the state a read handler answers from: linearizable by
// default (this node is the leader, see ToLeader), or this node's local
// state when the client asked for a stale read (X-Raftcat-Consistency:
// stale). The answer carries the index the state reflects.
func (s *Server) State(c echo.Context) (*fsm.State, error) {
	var st *fsm.State
	var idx uint64
	if isStaleRead(c.Request()) || isFollowerRead(c.Request()) {
		st, idx = s.cluster.StaleState() // a follower read has applied its read index
	} else {
		var err error
		if st, idx, err = s.cluster.LinearizableState(c.Request().Context()); err != nil {
			noteOutcome(c, err, false)
			return nil, err
		}
	}
	c.Response().Header().Set(HeaderIndex, strconv.FormatUint(idx, 10))
	return st, nil
}

// NoBody is the request type of writes that read no body (their input is
// the path and the query): Write then leaves the body unread.
type NoBody struct{}

// In is a write request as its protocol's Build sees it.
type In[R any] struct {
	echo.Context
	Body  R    // the JSON body, decoded
	Found bool // false when the body was empty or JSON null
	// Stamp is what the command must carry: the leader's clock and the
	// caller.
	Stamp fsm.Stamp

	srv *Server // the serving node's, for the data directories (see CheckNotReserved)
}

// CheckNotReserved refuses a table location or storage root that would
// reach a node's own files (its raft log, snapshots and the token hashes
// they hold): one at, inside or above the data directory of this node or
// of any peer gossip told it about (a
// table's maintenance, such as VACUUM, deletes files it does not know
// below its location; a share or vended credentials would hand out what
// lies below it). The default managed storage root, the data directory's
// warehouse/, is allowed.
func (in *In[R]) CheckNotReserved(field, loc string) error {
	return checkNotReserved(in.srv.dataDirs(), field, loc)
}

// CheckNotReserved is In.CheckNotReserved for writes that do not go
// through Write (plans).
func (s *Server) CheckNotReserved(field, loc string) error {
	return checkNotReserved(s.dataDirs(), field, loc)
}

func checkNotReserved(dataDirs []string, field, loc string) error {
	for _, d := range dataDirs {
		if err := checkNotReservedBy(d, field, loc); err != nil {
			return err
		}
	}
	return nil
}

// dataDirs are the data directories of this node and of the peers gossip
// told it about.
func (s *Server) dataDirs() []string {
	dirs := []string{s.cfg.DataDir}
	if d, ok := s.cluster.(interface{ DataDirs() []string }); ok {
		dirs = append(dirs, d.DataDirs()...)
	}
	return dirs
}

func checkNotReservedBy(dataDir, field, loc string) error {
	if dataDir == "" || loc == "" {
		return nil
	}
	dir := "file://" + strings.TrimRight(filepath.ToSlash(dataDir), "/")
	within := func(a, b string) bool {
		a, b = strings.TrimRight(a, "/"), strings.TrimRight(b, "/")
		return a == b || strings.HasPrefix(a, b+"/")
	}
	if within(dir, loc) || (within(loc, dir) && !within(loc, dir+"/warehouse")) {
		return Invalid("%s '%s' would reach the catalog server's own files (its data directory, which holds the raft log and snapshots).", field, Clip(loc))
	}
	return nil
}

// Build checks a bound write request and translates it into the command
// to propose.
type Build[R any, C fsm.Command] func(in *In[R]) (C, error)

// Decide settles, on the leader and before proposing, what the state
// machine cannot decide itself (it reads no clock and no storage); st is
// this node's applied state.
type Decide[C fsm.Command] func(c echo.Context, st *fsm.State, cmd C)

// Render writes the answer from the applied command's result.
type Render func(c echo.Context, res fsm.Result) error

// Write is the flow of every write: bind the JSON body into R, build the
// command, stamp it (Build places in.Stamp), let decide (may be nil)
// settle what must be settled before proposing, propose, and render the
// result. A domain error the state machine answers with is returned as
// the request's error, rendered by the group's mapping.
func Write[R any, C fsm.Command](s *Server, build Build[R, C], decide Decide[C], render Render) echo.HandlerFunc {
	return func(c echo.Context) error {
		in := &In[R]{Context: c, Stamp: stamp(c), srv: s}
		if _, none := any(in.Body).(NoBody); !none {
			var err error
			if in.Found, err = BindJSON(c, &in.Body); err != nil {
				return err
			}
		}
		cmd, err := build(in)
		if err != nil {
			return err
		}
		if decide != nil {
			st, _ := s.cluster.StaleState()
			decide(c, st, cmd)
		}
		res, err := s.propose(c, cmd)
		if err != nil {
			return err
		}
		return render(c, res)
	}
}

// Propose replicates a command a handler builds itself, outside Write,
// and returns its result, or its error (a domain error too). It records
// for the request that a proposal was made, or refused because this node
// no longer leads (see serveAsLeader). The answer's index stays the one
// of the state the handler read.
func (s *Server) Propose(c echo.Context, cmd fsm.Command) (fsm.Result, error) {
	res, _, err := s.proposeAt(c, cmd)
	return res, err
}

// propose replicates a command and returns its result, or its domain
// error; the answer carries the index it was applied at.
func (s *Server) propose(c echo.Context, cmd fsm.Command) (fsm.Result, error) {
	res, idx, err := s.proposeAt(c, cmd)
	if idx > 0 {
		c.Response().Header().Set(HeaderIndex, strconv.FormatUint(idx, 10))
	}
	return res, err
}

// proposeAt replicates a command, records what that did for the request
// and returns the result, the index it was applied at (0: not applied)
// and the error, the result's domain error included.
func (s *Server) proposeAt(c echo.Context, cmd fsm.Command) (fsm.Result, uint64, error) {
	res, idx, err := s.cluster.Propose(c.Request().Context(), cmd)
	noteOutcome(c, err, true)
	if err != nil {
		return res, 0, err
	}
	if res.Err != nil { // a typed nil must not become a non-nil error
		return res, idx, res.Err
	}
	return res, idx, nil
}

// LookupCatalog resolves a catalog, or answers its 404.
func LookupCatalog(st *fsm.State, catalog string) (*fsm.Catalog, error) {
	c, ok := st.Catalog(catalog)
	if !ok {
		return nil, fsm.Errf(fsm.CodeCatalogNotFound, "Catalog not found: %s", Clip(catalog))
	}
	return c, nil
}

// LookupSchema resolves a schema with the 404 of the first missing level.
func LookupSchema(st *fsm.State, catalog, schema string) (*fsm.Schema, error) {
	if _, err := LookupCatalog(st, catalog); err != nil {
		return nil, err
	}
	s, ok := st.Schema(catalog, schema)
	if !ok {
		return nil, fsm.Errf(fsm.CodeSchemaNotFound, "Schema not found: %s.%s", Clip(catalog), Clip(schema))
	}
	return s, nil
}

// LookupTable resolves a three-part table name with the 404 of the first
// missing level.
func LookupTable(st *fsm.State, catalog, schema, name string) (*fsm.Table, error) {
	if _, err := LookupSchema(st, catalog, schema); err != nil {
		return nil, err
	}
	t, ok := st.Table(catalog, schema, name)
	if !ok {
		return nil, fsm.Errf(fsm.CodeTableNotFound, "Table not found: %s.%s.%s", Clip(catalog), Clip(schema), Clip(name))
	}
	return t, nil
}

// NonNil renders a missing map as {} rather than null.
func NonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
