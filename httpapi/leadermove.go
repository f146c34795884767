package httpapi

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
)

// When leadership moves while the leader serves a request (a transfer, an
// election), raft refuses the request's proposal or read with
// ErrNotLeader: nothing was proposed. Such a request goes on to the new
// leader instead of failing. A client's own request is forwarded by the
// node it reached, once that node no longer leads; a request a follower
// forwarded is answered with HeaderLeaderMoved, and the follower sends it
// on. Only refusals by the flows that record them (State, Write, Commit)
// count, and only when nothing was proposed for the request before: a
// request that changed something is never sent twice.

// HeaderLeaderMoved marks a leader's answer to a forwarded request that
// it refused, having done nothing, because it no longer leads: the
// follower sends the request to the new leader instead of answering.
const HeaderLeaderMoved = "X-Raftcat-Leader-Moved"

// Keys of a request's record of what its flows did (echo.Context.Set).
const (
	keyProposed         = "raftcat.proposed"           // a proposal reached raft
	keyRefusedNotLeader = "raftcat.refused-not-leader" // a flow was refused with ErrNotLeader
)

// noteOutcome records what a proposal or a linearizable read did for the
// request: refused as not the leader (nothing done), or anything else (a
// proposal may have been applied).
func noteOutcome(c echo.Context, err error, proposal bool) {
	switch {
	case errors.Is(err, clusterapi.ErrNotLeader):
		c.Set(keyRefusedNotLeader, true)
	case proposal:
		c.Set(keyProposed, true)
	}
}

// refusedUnchanged reports whether err is a recorded not-the-leader
// refusal of a request that proposed nothing and has not been answered.
func refusedUnchanged(c echo.Context, err error) bool {
	refused, _ := c.Get(keyRefusedNotLeader).(bool)
	proposed, _ := c.Get(keyProposed).(bool)
	return refused && !proposed && errors.Is(err, clusterapi.ErrNotLeader) && !c.Response().Committed
}

// serveAsLeader runs a request on this node, which leads. If leadership
// moves before the request changed anything, the request is served by the
// new leader, or here again if this node still leads once the move was
// given up (a transfer whose target did not take over). Streamed bodies
// are not kept, so those requests are answered as they are.
func (s *Server) serveAsLeader(c echo.Context, next echo.HandlerFunc) error {
	if c.Request().Header.Get(HeaderForwarded) != "" {
		return serveForwarded(c, next)
	}
	if s.streams(c) {
		return next(c)
	}
	kept := keepBody(c.Request())
	before := c.Response().Header().Clone() // the request id and served-by, without what the handler adds
	err := next(c)
	kept.restore(c.Request())
	if !refusedUnchanged(c, err) {
		return err
	}
	body, rerr := kept.whole()
	if rerr != nil {
		return err
	}
	return s.serveAfterMove(c, next, body, before, err)
}

// serveForwarded runs a request a follower forwarded; if leadership moved
// before it changed anything, the answer says so, and the follower sends
// the request on (it kept the body).
func serveForwarded(c echo.Context, next echo.HandlerFunc) error {
	err := next(c)
	if refusedUnchanged(c, err) {
		c.Response().Header().Set(HeaderLeaderMoved, "true")
	}
	return err
}

// A request refused while leadership moves looks every moveLookEvery for
// a new leader to forward it to. While this node still leads (a transfer
// refuses proposals until it ends, within an election timeout), the
// request runs here again after moveRetryFirst, then twice as long each
// time up to moveRetryMost: a handler may do work outside raft before it
// proposes (write a metadata file).
const (
	moveLookEvery  = 10 * time.Millisecond
	moveRetryFirst = 10 * time.Millisecond
	moveRetryMost  = 250 * time.Millisecond
)

// serveAfterMove serves a request this node refused while leadership was
// moving: forwarded to the new leader once this node no longer leads, or
// run here again while it still does. After LeaderWait, counted from the
// refusal, the refusal is the answer.
func (s *Server) serveAfterMove(c echo.Context, next echo.HandlerFunc, body []byte, before http.Header, refusal error) error {
	deadline := time.Now().Add(s.cfg.LeaderWait)
	pause := moveRetryFirst
	rerun := time.Now().Add(pause)
	resetHeader(c, before)
	for time.Now().Before(deadline) {
		select {
		case <-c.Request().Context().Done():
			return refusal
		case <-time.After(moveLookEvery):
		}
		if !s.cluster.IsLeader() {
			s.log.DebugContext(c.Request().Context(), "leadership moved while serving a request: forwarding it to the new leader",
				"method", c.Request().Method, "path", c.Request().URL.Path)
			if handledHere, err := s.proxy.forward(c, body, deadline); !handledHere {
				return err
			}
		} else if time.Now().Before(rerun) {
			continue
		}
		c.Request().Body = io.NopCloser(bytes.NewReader(body))
		if err := next(c); !refusedUnchanged(c, err) {
			return err
		}
		resetHeader(c, before)
		pause = min(2*pause, moveRetryMost)
		rerun = time.Now().Add(pause)
	}
	return refusal
}

// resetHeader puts the answer's header back as it was before the handler
// ran and clears the record of the last refusal, for another try.
func resetHeader(c echo.Context, before http.Header) {
	h := c.Response().Header()
	clear(h)
	maps.Copy(h, before)
	c.Set(keyRefusedNotLeader, false)
}

// keptBody keeps what is read of a request body, so that the request can
// be sent on whole after a handler read it. A nil keptBody is an empty
// body.
type keptBody struct {
	io.ReadCloser
	read bytes.Buffer
}

// keepBody puts a keptBody in front of r's body, if it has one.
func keepBody(r *http.Request) *keptBody {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	k := &keptBody{ReadCloser: r.Body}
	r.Body = k
	return k
}

// restore puts the body back as it was (the error handler looks there for
// the error reading it met), unless the handler replaced it.
func (k *keptBody) restore(r *http.Request) {
	if k != nil && r.Body == k {
		r.Body = k.ReadCloser
	}
}

func (k *keptBody) Read(p []byte) (int, error) {
	n, err := k.ReadCloser.Read(p)
	k.read.Write(p[:n])
	return n, err
}

// whole returns the body: what was read, then the rest.
func (k *keptBody) whole() ([]byte, error) {
	if k == nil {
		return nil, nil
	}
	rest, err := io.ReadAll(k.ReadCloser)
	if err != nil {
		return nil, err
	}
	return append(k.read.Bytes(), rest...), nil
}
