package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/internal/rounds"
)

// With Config.FollowerReads, followers answer linearizable reads (GET and
// HEAD without a body) themselves instead of forwarding them. Before the
// read, the follower asks the leader for its read index: the leader reads
// its commit index and then confirms that it still leads (at once under
// its read lease). Once the follower has applied that index, its state
// holds every write acknowledged before the read began, and it answers
// from it. Reads that arrive while such a request is out share the next
// one, so the leader answers one small request per round instead of every
// read.
//
// A read that cannot get an index (no leader known, a leader that no
// longer leads or does not know the request, or such a failure within the
// last readIndexRetry), a follower that does not apply the index within
// followerApplyWait, and a read whose handler turns out to need the
// leader (it proposes, such as a GET that activates a link, or reads the
// leader's state itself, such as a backup) are forwarded to the leader as
// before. The leader's own reads are unchanged.
//
// The price is latency: the leader's commit index is usually ahead of what
// the follower knows to be committed, so the read waits for the next
// AppendEntries to carry it, about one replication round. Reads then
// spread over the nodes instead of all reaching the leader.

// ReadIndexPath is where the leader answers a follower's read-index
// request: {"index": N}.
const ReadIndexPath = "/v1/cluster/read-index"

// Bounds of a follower read's two waits.
const (
	readIndexTimeout  = 2 * time.Second // one request for the leader's read index
	followerApplyWait = time.Second     // applying it here, before forwarding instead
	readIndexRetry    = time.Second     // after a failed request, forward reads for this long
)

type readIndexAnswer struct {
	Index uint64 `json:"index"`
}

// followerReadKey marks a request's context once its read index is applied.
type followerReadKey struct{}

// followerReads fetches the leader's read index in shared rounds.
type followerReads struct {
	s           *Server
	rounds      *rounds.Rounds
	outcomes    *prometheus.CounterVec
	lastFailure atomic.Int64 // unix nanoseconds of the last failed round
}

func newFollowerReads(s *Server, reg prometheus.Registerer) *followerReads {
	f := &followerReads{s: s, outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftcat_follower_reads_total",
		Help: "Reads a follower was asked for, by outcome: local (answered here at the leader's read index) or forwarded (to the leader)."},
		[]string{"outcome"})}
	for _, o := range []string{"local", "forwarded"} {
		f.outcomes.WithLabelValues(o)
	}
	reg.MustRegister(f.outcomes)
	f.rounds = rounds.New(f.fetch)
	return f
}

// serveReadIndex answers a read-index request on the leader.
func (s *Server) serveReadIndex(c echo.Context) error {
	idx, err := s.cluster.ReadIndex(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, readIndexAnswer{Index: idx})
}

// readsHere reports whether a follower answers the request itself: it is
// a read, and this node has applied the leader's read index, which the
// request's context then carries.
func (f *followerReads) readsHere(c echo.Context) bool {
	r := c.Request()
	if !f.s.cfg.FollowerReads || (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.ContentLength != 0 {
		return false
	}
	if f.failedRecently() {
		f.outcomes.WithLabelValues("forwarded").Inc()
		return false
	}
	idx, err := f.rounds.Ticket().Wait(r.Context())
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), followerApplyWait)
		err = f.s.cluster.WaitApplied(ctx, idx)
		cancel()
	}
	if err != nil {
		f.s.log.DebugContext(r.Context(), "forwarding a read: no read index applied here", "err", err)
		f.outcomes.WithLabelValues("forwarded").Inc()
		return false
	}
	c.SetRequest(r.WithContext(context.WithValue(r.Context(), followerReadKey{}, idx)))
	return true
}

// serve answers a read here; it reports false, having written nothing,
// when the handler needs the leader after all.
func (f *followerReads) serve(c echo.Context, next echo.HandlerFunc) (bool, error) {
	h := c.Response().Header()
	before := h.Clone() // the request id and served-by, without what the handler adds
	err := next(c)
	if errors.Is(err, clusterapi.ErrNotLeader) && !c.Response().Committed {
		clear(h)
		maps.Copy(h, before)
		f.outcomes.WithLabelValues("forwarded").Inc()
		return false, nil
	}
	f.outcomes.WithLabelValues("local").Inc()
	return true, err
}

// isFollowerRead reports whether a request is a follower read whose
// read index is applied.
func isFollowerRead(r *http.Request) bool {
	_, ok := r.Context().Value(followerReadKey{}).(uint64)
	return ok
}

// failedRecently reports whether a round failed within the last
// readIndexRetry: reads then go to the leader at once instead of each
// waiting for another round to fail (no leader, a leader that does not
// answer).
func (f *followerReads) failedRecently() bool {
	last := f.lastFailure.Load()
	return last != 0 && time.Since(time.Unix(0, last)) < readIndexRetry
}

// fetch is one round: the leader's read index, or the time of the failure.
func (f *followerReads) fetch() (uint64, error) {
	idx, err := f.fetchOnce()
	if err != nil {
		f.lastFailure.Store(time.Now().UnixNano())
	}
	return idx, err
}

// fetchOnce asks the leader for its read index, over the relay connection
// forwarded requests use.
func (f *followerReads) fetchOnce() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readIndexTimeout)
	defer cancel()
	addr, err := f.s.proxy.leaderAddr()
	if err != nil {
		return 0, err
	}
	hostport, ok := relayHost(addr)
	if !ok {
		return 0, fmt.Errorf("leader address %s takes no relay connection", addr)
	}
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: ReadIndexPath}, Host: hostport,
		Header: http.Header{HeaderForwarded: {f.s.cluster.ID()}}}
	f.s.signPeer(req.Header, http.MethodGet, ReadIndexPath)
	resp, _, err := f.s.proxy.relay.Do(ctx, hostport, req, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("leader answered the read-index request with %d: %.200s", resp.StatusCode, body)
	}
	var a readIndexAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.Index == 0 {
		return 0, fmt.Errorf("leader's read index %.200q: %v", body, err)
	}
	return a.Index, nil
}
