package iceberg

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go/table"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// settled is how a write's Build answers a request that needs no entry
// (a staged create, a commit that changes nothing): writeRoute renders
// it as the answer instead of proposing.
type settled struct {
	status int
	body   any
	etag   string
}

func (*settled) Error() string { return "settled without an entry" }

// writtenKey holds, in the request context, the metadata files a write
// created before proposing.
const writtenKey = "iceberg.written"

// appliedKey marks, in the request context, a write whose entry applied:
// its files are then named by the state, whatever becomes of the answer.
const appliedKey = "iceberg.applied"

// writeRoute is the flow of every write: httpapi.Write with this
// package's build and render, and the settling of what it wrote: the
// files of a write that failed are deleted, unless its outcome is
// unknown (then the answer is CommitStateUnknownException and they stay,
// since the entry may yet apply) or the entry applied and only rendering
// the answer failed (a client gone while its commit was applied).
func writeRoute[R any](build func(*Server, *httpapi.In[R]) (fsm.Command, error),
	render func(*Server, echo.Context, fsm.Result) error) func(*Server) echo.HandlerFunc {
	return func(s *Server) echo.HandlerFunc {
		inner := httpapi.Write(s.core, func(in *httpapi.In[R]) (fsm.Command, error) { return build(s, in) }, nil,
			func(c echo.Context, res fsm.Result) error {
				c.Set(appliedKey, true)
				return render(s, c, res)
			})
		return func(c echo.Context) error {
			defer unlockTables(c)
			return s.settle(c, inner(c))
		}
	}
}

func (s *Server) settle(c echo.Context, err error) error {
	var st *settled
	switch {
	case errors.As(err, &st):
		if st.etag != "" {
			c.Response().Header().Set("ETag", st.etag)
		}
		return c.JSON(st.status, st.body)
	case err == nil:
		return nil
	}
	files, _ := c.Get(writtenKey).([]string)
	if applied, _ := c.Get(appliedKey).(bool); applied || len(files) == 0 {
		return err // an applied write's answer failed: its files are in use
	}
	if unknownOutcome(err) {
		return fsm.Errf(fsm.CodeCommitStateUnknown, "The commit's outcome is unknown (%v); reload the table before retrying.", err)
	}
	for _, f := range files {
		s.removeFile(c.Request().Context(), f)
	}
	return err
}

func unknownOutcome(err error) bool {
	return errors.Is(err, clusterapi.ErrUnknownOutcome) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// writeNew writes a new metadata file and records it for settle.
func (s *Server) writeNew(c echo.Context, loc string, meta table.Metadata, base *metadataFile) (*metadataFile, error) {
	f, err := s.writeMetadata(c.Request().Context(), loc, meta, base)
	if err != nil {
		return nil, err
	}
	files, _ := c.Get(writtenKey).([]string)
	c.Set(writtenKey, append(files, loc))
	return f, nil
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
