package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/internal/relay"
)

var errLeaderUnreachable = errors.New("leader unreachable")

// ToLeader is the middleware that sends every request that needs the
// leader to it: writes, and reads that a follower cannot answer itself
// (see followerReads) unless they opt into stale local state. On a
// follower the request is forwarded and the client gets the leader's
// answer; a request that was already forwarded once is never forwarded
// again. Groups mounted with ToLeader have it on every route.
func (s *Server) ToLeader(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(HeaderServedBy, s.cluster.ID())
		if isStaleRead(c.Request()) {
			return next(c)
		}
		if s.cluster.IsLeader() {
			s.cluster.NoteEntry(entryNode(c.Request(), s.cluster.ID()))
			return s.serveAsLeader(c, next)
		}
		if c.Request().Header.Get(HeaderForwarded) != "" { // nothing done: the follower sends it on
			c.Response().Header().Set(HeaderLeaderMoved, "true")
			return fmt.Errorf("%w: forwarded request reached a node that no longer leads", clusterapi.ErrNotLeader)
		}
		if s.reads.readsHere(c) {
			if served, err := s.reads.serve(c, next); served {
				return err
			}
		}
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return bodyReadError(err)
		}
		handledHere, err := s.proxy.forward(c, body, time.Now().Add(s.cfg.LeaderWait))
		if handledHere { // this node became the leader while waiting
			c.Request().Body = io.NopCloser(bytes.NewReader(body))
			return next(c)
		}
		return err
	}
}

// entryNode is the node a request entered the cluster at: the follower
// that sent it on, or this one. Only a request that came over a relay
// connection or a peer connection (Config.Peers), the ways followers send
// requests on, is counted at the follower its header names: a client that
// sets the header on its own request cannot steer leadership with it.
// (Which peer opened a relay connection on the HTTP port is not proven;
// on the cluster port it is authenticated.)
func entryNode(r *http.Request, self string) string {
	if via := r.Header.Get(HeaderForwarded); via != "" && (relay.Relayed(r) || viaPeer(r)) {
		return via
	}
	return self
}

// isStaleRead reports whether a request asked for this node's local state.
func isStaleRead(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.EqualFold(r.Header.Get(HeaderConsistency), "stale")
}

// leaderProxy forwards requests to the leader over pooled keep-alive
// connections.
type leaderProxy struct {
	s      *Server
	client *http.Client
	relay  *relay.Client
	peers  Peers // Config.Peers with PeersOnly, else nil
}

// peerDialTimeout bounds dialling a peer.
const peerDialTimeout = 2 * time.Second

// newLeaderProxy is the one place this node's connections to its peers
// are made: the relay client (one multiplexed connection per leader) and
// the transport of plain HTTP exchanges both start here. With
// Config.PeersOnly both dial through Config.Peers, to the addresses leaderAddr and
// memberAddr give: mutual TLS with the cluster CA, inside which the
// exchanges are plain HTTP/1.1. Without it they dial peers' HTTP ports.
func newLeaderProxy(s *Server) *leaderProxy {
	p := &leaderProxy{s: s, relay: relay.NewClient(peerDialTimeout)}
	if s.peersOnly() {
		p.peers = s.cfg.Peers
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: peerDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
	}
	if p.peers != nil {
		transport.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, peerDialTimeout)
			defer cancel()
			return p.peers.DialPeer(ctx, addr)
		}
		p.relay.Dial = p.peers.DialPeer
	}
	p.relay.UpgradeHeader = func() http.Header {
		h := http.Header{}
		s.signPeer(h, http.MethodGet, relay.Path)
		return h
	}
	p.client = &http.Client{Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return p
}

// leaderAddr is where every request to the leader goes: its cluster
// address with Config.Peers, else its HTTP address.
func (p *leaderProxy) leaderAddr() (string, error) {
	if p.peers != nil {
		return p.peers.LeaderPeerAddr()
	}
	return p.s.cluster.LeaderHTTPAddr()
}

// memberAddr is where requests to member m go: its cluster address (the
// raft address, which the cluster port serves) with Config.Peers, else
// its HTTP address.
func (p *leaderProxy) memberAddr(m clusterapi.Member) string {
	if p.peers != nil {
		return m.RaftAddr
	}
	return m.HTTPAddr
}

// forward sends the request to the current leader and copies its answer
// back. While no leader is known, or the leader cannot be dialled (so the
// request was never sent), it waits and tries again until deadline. It
// reports handledHere when this node became the leader.
func (p *leaderProxy) forward(c echo.Context, body []byte, deadline time.Time) (handledHere bool, err error) {
	for {
		if p.s.cluster.IsLeader() {
			return true, nil
		}
		addr, lerr := p.leaderAddr()
		if lerr == nil {
			sent, ferr := p.relaySend(c, addr, body)
			if ferr == nil {
				p.s.metrics.forwarded.WithLabelValues("answered").Inc()
				return false, nil
			}
			if sent { // the leader may have acted on it: the outcome is unknown
				p.s.metrics.forwarded.WithLabelValues("unknown_outcome").Inc()
				return false, fmt.Errorf("%w: forwarding to the leader at %s failed after sending: %v", clusterapi.ErrUnknownOutcome, addr, ferr)
			}
			lerr = fmt.Errorf("%w: %v", errLeaderUnreachable, ferr)
		}
		if time.Now().After(deadline) {
			p.s.metrics.forwarded.WithLabelValues("no_leader").Inc()
			return false, lerr
		}
		select {
		case <-c.Request().Context().Done():
			p.s.metrics.forwarded.WithLabelValues("canceled").Inc()
			return false, c.Request().Context().Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// relaySend forwards once over the relay connection to the leader, which
// many requests share. Requests of groups that relay go this way; the
// others (a snapshot download streams) and leaders that do not accept
// relay connections get a plain HTTP exchange.
func (p *leaderProxy) relaySend(c echo.Context, addr string, body []byte) (sent bool, err error) {
	in := c.Request()
	hostport, ok := relayHost(addr)
	if !ok || !p.s.relays(in.URL.Path) || len(body) > relay.MaxFrame/2 {
		return p.send(c, addr, bytes.NewReader(body))
	}
	header := in.Header.Clone()
	p.stamp(c, header)
	out := &http.Request{Method: in.Method, URL: in.URL, Host: in.Host, Header: header}
	resp, sent, err := p.relay.Do(in.Context(), hostport, out, body)
	if errors.Is(err, relay.ErrUnsupported) {
		return p.send(c, addr, bytes.NewReader(body))
	}
	if err != nil {
		return sent, err
	}
	return p.answerUnlessMoved(c, addr, resp)
}

// send forwards once. sent is false when the request surely never reached
// the leader (the connection could not be made).
func (p *leaderProxy) send(c echo.Context, addr string, body io.Reader) (sent bool, err error) {
	in := c.Request()
	out, err := http.NewRequestWithContext(in.Context(), in.Method, leaderURL(addr)+in.URL.RequestURI(), body)
	if err != nil {
		return false, err
	}
	for k, vs := range in.Header {
		if k == "Connection" || k == "Keep-Alive" || k == "Te" || k == "Upgrade" || k == "Proxy-Connection" {
			continue
		}
		out.Header[k] = vs
	}
	p.stamp(c, out.Header)
	out.Host = in.Host // the leader answers as the node the client reached (URLs it builds)
	resp, err := p.client.Do(out)
	if err != nil {
		var op *net.OpError
		return !(errors.As(err, &op) && op.Op == "dial"), err
	}
	return p.answerUnlessMoved(c, addr, resp)
}

// stamp marks a request this node sends on to the leader: which node
// sent it, the caller it authenticated (signForward), and the scheme the
// client used, so that the URLs the leader builds keep it (see BaseURL):
// https when the client came over TLS, unless its request already said
// (a proxy in front of this node).
func (p *leaderProxy) stamp(c echo.Context, h http.Header) {
	in := c.Request()
	h.Set(HeaderForwarded, p.s.cluster.ID())
	p.s.signForward(c, h, in.Method, in.URL.RequestURI())
	if in.TLS != nil && h.Get(echo.HeaderXForwardedProto) == "" {
		h.Set(echo.HeaderXForwardedProto, "https")
	}
}

// BaseURL is the URL the client reached this API at, for the URLs a
// protocol hands out: the scheme it used at the node it entered the
// cluster at (see stamp) and the host it asked for.
func BaseURL(c echo.Context) string {
	return c.Scheme() + "://" + c.Request().Host
}

// errLeaderMoved is a forwarded request's refusal by a node that no
// longer leads and did nothing with it.
var errLeaderMoved = errors.New("no longer leads")

// answerUnlessMoved copies the leader's answer to the client, unless the
// leader refused the request because leadership moved (HeaderLeaderMoved):
// then the request was not served (sent is false) and goes to the new
// leader.
func (p *leaderProxy) answerUnlessMoved(c echo.Context, addr string, resp *http.Response) (sent bool, err error) {
	if resp.Header.Get(HeaderLeaderMoved) != "" {
		resp.Body.Close()
		p.s.metrics.forwarded.WithLabelValues("leader_moved").Inc()
		return false, fmt.Errorf("%s %w", addr, errLeaderMoved)
	}
	p.answer(c, resp)
	return true, nil
}

// answer copies the leader's answer to the client.
func (p *leaderProxy) answer(c echo.Context, resp *http.Response) {
	defer resp.Body.Close()
	h := c.Response().Header()
	h.Del(HeaderServedBy)
	for k, vs := range resp.Header {
		h[k] = vs
	}
	c.Response().WriteHeader(resp.StatusCode)
	buf := copyBuffers.Get().(*[]byte)
	_, err := io.CopyBuffer(c.Response(), resp.Body, *buf)
	copyBuffers.Put(buf)
	if err != nil {
		p.s.log.WarnContext(c.Request().Context(), "copying the leader's answer failed", "path", c.Request().URL.Path, "err", err)
	}
}

// copyBuffers are reused to copy the leader's answers: the response writer
// cannot read from the body itself, so io.Copy would allocate 32 KiB for
// every forwarded request.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relayHost returns the host:port of a peer's HTTP address (host:port or
// http://host:port) for a relay connection; ok is false for other schemes.
func relayHost(addr string) (hostport string, ok bool) {
	hostport, plain := strings.CutPrefix(addr, "http://")
	if !plain && strings.Contains(addr, "://") {
		return "", false
	}
	hostport, _, _ = strings.Cut(hostport, "/")
	return hostport, true
}

func leaderURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}

// StreamToLeader forwards a request whose body is too large to hold in
// memory (a snapshot restore) to the leader once, without retrying, and
// copies the leader's answer back.
func (s *Server) StreamToLeader(c echo.Context) error { return s.proxy.stream(c) }

func (p *leaderProxy) stream(c echo.Context) error {
	addr, err := p.leaderAddr()
	if err != nil {
		return err
	}
	sent, err := p.send(c, addr, c.Request().Body)
	if err != nil && sent {
		return fmt.Errorf("%w: forwarding to the leader at %s failed after sending: %v", clusterapi.ErrUnknownOutcome, addr, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errLeaderUnreachable, err)
	}
	return nil
}

// CallLeader sends one request of this node's own to the leader and
// returns the answer's status and body. While no leader is reachable it
// retries until the configured LeaderWait has passed.
func (s *Server) CallLeader(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	return s.proxy.callLeader(ctx, method, path, body)
}

func (p *leaderProxy) callLeader(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	deadline := time.Now().Add(p.s.cfg.LeaderWait)
	for {
		addr, err := p.leaderAddr()
		if err == nil {
			req, rerr := http.NewRequestWithContext(ctx, method, leaderURL(addr)+path, bytes.NewReader(body))
			if rerr != nil {
				return 0, nil, rerr
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(HeaderForwarded, p.s.cluster.ID())
			p.s.signPeer(req.Header, method, path)
			resp, derr := p.client.Do(req)
			if derr == nil {
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b, nil
			}
			err = fmt.Errorf("%w: %v", errLeaderUnreachable, derr)
		}
		if time.Now().After(deadline) {
			return 0, nil, err
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
