package httpapi

import (
	"context"
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
)

// Problem is an error resolved to what every protocol needs to render it.
type Problem struct {
	// Code is the domain error's code, 0 when the problem is not a domain
	// error. A protocol's mapping decides the status of domain errors.
	Code fsm.Code
	// Status is the HTTP status of a problem that is not a domain error.
	Status     int
	Message    string
	RetryAfter bool
	// Kind is the protocol's own error type for a problem the protocol
	// raised itself (KindError); empty otherwise.
	Kind string
	// Op is the operation that failed, in a request of several (a batch,
	// a transaction); nil otherwise.
	Op *OpError
}

// KindError is an error a protocol raises with an error type of its own
// (Delta Sharing's MALFORMED_REQUEST, say), rendered with Status by the
// protocol's mapping, which sees the type as Problem.Kind.
type KindError struct {
	Status        int
	Kind, Message string
}

func (e *KindError) Error() string { return e.Message }

// ErrorMapping renders problems in one protocol's error envelope.
type ErrorMapping interface {
	// Render returns the status and the JSON body of a problem.
	Render(p Problem) (status int, body any)
}

// sentinel is how a replication-layer error is answered in every protocol.
type sentinel struct {
	errs    []error
	status  int
	message func(err error) string // nil: the error's own text
}

const unreachableText = "The catalog cluster has no reachable leader right now; retry the request. ("

// sentinels are the non-domain errors with an answer of their own; a new
// sentinel is one more entry. 503s among them invite a retry.
var sentinels = []sentinel{
	{errs: []error{clusterapi.ErrBadSnapshot, clusterapi.ErrLastVoter, clusterapi.ErrNoPeer}, status: http.StatusBadRequest},
	{errs: []error{clusterapi.ErrUnknownServer}, status: http.StatusNotFound},
	{errs: []error{clusterapi.ErrUnknownOutcome}, status: http.StatusServiceUnavailable, message: func(error) string {
		return "The outcome of the request is unknown (leadership changed while it was being replicated); retry the identical request."
	}},
	{errs: []error{clusterapi.ErrNotLeader, clusterapi.ErrNoLeader, clusterapi.ErrShutdown, errLeaderUnreachable},
		status: http.StatusServiceUnavailable, message: func(err error) string { return unreachableText + err.Error() + ")" }},
	{errs: []error{clusterapi.ErrUpgradePending}, status: http.StatusServiceUnavailable},
	{errs: []error{clusterapi.ErrInsufficientStorage}, status: http.StatusInsufficientStorage},
	{errs: []error{clusterapi.ErrBusy}, status: http.StatusServiceUnavailable, message: func(error) string {
		return "The leader could not take the request in time (it is overloaded); nothing was changed. Retry the request."
	}},
	{errs: []error{context.DeadlineExceeded, context.Canceled}, status: http.StatusServiceUnavailable,
		message: func(err error) string { return "Request timed out: " + err.Error() }},
}

// classify turns any handler error into a problem. Domain errors carry
// their code; replication errors become 503s that invite a retry.
func classify(err error) Problem {
	var oe *OpError
	if errors.As(err, &oe) {
		p := classify(oe.Err)
		p.Op = oe
		return p
	}
	var de *fsm.Error
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	var ke *KindError
	switch {
	case errors.As(err, &de):
		return Problem{Code: de.Code, Message: de.Message}
	case errors.As(err, &ke):
		return Problem{Status: ke.Status, Kind: ke.Kind, Message: ke.Message}
	case errors.As(err, &mbe):
		return Problem{Status: http.StatusRequestEntityTooLarge, Message: "request body too large"}
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		return Problem{Status: he.Code, Message: msg}
	}
	for _, sn := range sentinels {
		for _, target := range sn.errs {
			if errors.Is(err, target) {
				return sn.problem(err)
			}
		}
	}
	return Problem{Status: http.StatusInternalServerError, Message: "Internal error: " + err.Error()}
}

func (sn sentinel) problem(err error) Problem {
	p := Problem{Status: sn.status, Message: err.Error(),
		RetryAfter: sn.status == http.StatusServiceUnavailable || sn.status == http.StatusInsufficientStorage}
	if sn.message != nil {
		p.Message = sn.message(err)
	}
	return p
}

// handleError is Echo's single error handler: it renders every error in
// the envelope of the group the request belongs to.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if berr := bodyFailure(c); berr != nil {
		err = berr
	}
	p := classify(err)
	p.Message = clipTo(p.Message, maxMessage)
	status, body := s.mappingOf(c.Request().URL.Path).Render(p)
	if status >= 500 && status != http.StatusServiceUnavailable {
		s.logFailure(c, p, err)
	}
	if p.RetryAfter {
		c.Response().Header().Set("Retry-After", "1")
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = c.JSON(status, body)
}

func (s *Server) mappingOf(path string) ErrorMapping {
	if g, ok := s.groupOf(path); ok && g.Errors != nil {
		return g.Errors
	}
	return unclaimed{}
}

// unclaimed renders errors of requests no group owns (unknown paths):
// {"error": message, "code": status}. Those are never domain errors.
type unclaimed struct{}

func (unclaimed) Render(p Problem) (int, any) {
	status := p.Status
	if p.Code != 0 || status == 0 {
		status = http.StatusInternalServerError
	}
	return status, map[string]any{"error": p.Message, "code": status}
}

// Invalid is a domain error of code CodeInvalid, a 400 in every protocol.
func Invalid(format string, args ...any) error { return fsm.Invalidf(format, args...) }

// clipAt is how much of a value taken from a request an error message
// quotes; maxMessage is the longest message rendered whole.
const (
	clipAt     = 128
	maxMessage = 1 << 10
)

// Clip shortens a value taken from a request for quoting in an error
// message: at most its first 128 bytes (whole characters), then "…".
func Clip(s string) string { return clipTo(s, clipAt) }

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
