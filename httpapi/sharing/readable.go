package sharing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/raftcat/raftcat/deltalog"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// checkReadable refuses a share update that adds a table whose Delta log
// cannot be read: every recipient's first query of it would fail. The
// latest snapshot is read through the same cache queries use, on the
// leader before proposing (the state machine reads no storage). A log
// storage cannot give (none yet, a missing commit, a damaged file) is a
// 400 FAILED_PRECONDITION naming the update, the table and the cause; a
// storage that fails to answer is a 503 to retry. What the state machine
// refuses itself (an unknown share or table, a table that is not Delta)
// is left to it, and so is everything but ADD. A node without table
// storage checks nothing.
func (s *Server) checkReadable(ctx context.Context, cmd *fsm.UpdateShare) error {
	if s.cfg.Objects == nil {
		return nil
	}
	st, _ := s.core.Node().StaleState()
	if _, ok := st.Share(cmd.Name); !ok {
		return nil
	}
	for i, u := range cmd.Updates {
		tb, ok := addedTable(st, u)
		if !ok {
			continue
		}
		if err := s.readLatest(ctx, tb); err != nil {
			return addError(i, tb, err)
		}
	}
	return nil
}

// addedTable is the Delta table an ADD names, if the state holds it.
func addedTable(st *fsm.State, u fsm.ShareUpdate) (*fsm.Table, bool) {
	parts := strings.Split(u.Object.Name, ".")
	if !strings.EqualFold(u.Action, fsm.ShareActionAdd) || len(parts) != 3 {
		return nil, false
	}
	tb, ok := st.Table(parts[0], parts[1], parts[2])
	if !ok || tb.Format != fsm.FormatDelta || tb.IsView() {
		return nil, false
	}
	return tb, true
}

// readLatest reads a table's latest snapshot as a query would.
func (s *Server) readLatest(ctx context.Context, tb *fsm.Table) error {
	lg, err := deltalog.Open(ctx, s.cfg.Objects, s.cache, deltalog.Source{Location: tb.Location, Ratified: ratified(tb)})
	if err != nil {
		return err
	}
	_, err = lg.Snapshot(ctx, lg.Latest())
	return err
}

// addError is the refusal of update i, adding tb, whose log read failed.
func addError(i int, tb *fsm.Table, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	detail := sharedTable{table: tb}.redact(err)
	cause, definite := logCause(err)
	if !definite {
		return &httpapi.KindError{Status: http.StatusServiceUnavailable, Kind: "UNAVAILABLE",
			Message: fmt.Sprintf("updates[%d]: the storage of table %s could not be read to check its Delta log (%s); nothing was changed, retry.", i, tb.FullName(), detail)}
	}
	return &httpapi.KindError{Status: http.StatusBadRequest, Kind: "FAILED_PRECONDITION",
		Message: fmt.Sprintf("updates[%d]: table %s cannot be shared: %s (%s). A table is added to a share once its Delta log can be read (its first commit is in storage); nothing was changed.", i, tb.FullName(), cause, detail)}
}
