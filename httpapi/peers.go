package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/internal/logging"
)

// Peers is the cluster's own network between nodes: when Config.Peers is
// set, every request this node sends to a peer goes over it, and peers'
// requests to this node come in on its listener.
type Peers interface {
	// LeaderPeerAddr is the leader's cluster address (host:port).
	LeaderPeerAddr() (string, error)
	// DialPeer connects to a peer's cluster address, authenticated.
	DialPeer(ctx context.Context, addr string) (net.Conn, error)
	// PeerListener yields the peer HTTP connections that came in.
	PeerListener() net.Listener
}

// peerConnKey marks the context of requests that came in on a peer
// connection (Peers.PeerListener), relayed ones included.
type peerConnKey struct{}

// viaPeer reports whether r came in over a peer connection.
func viaPeer(r *http.Request) bool {
	via, _ := r.Context().Value(peerConnKey{}).(bool)
	return via
}

// errClientPort refuses what only peers send when it comes in on the
// client port while the cluster has a network of its own.
var errClientPort = errors.New("requests between nodes come over the cluster port, not the client port")

// fromPeer reports whether r was forwarded by a peer, as far as its
// header and connection tell: with PeersOnly, only a request on a peer
// connection can be.
func (s *Server) fromPeer(r *http.Request) bool {
	return r.Header.Get(HeaderForwarded) != "" && (!s.peersOnly() || viaPeer(r))
}

// peersOnly reports whether peers reach this node, and it reaches them,
// over Config.Peers alone.
func (s *Server) peersOnly() bool { return s.cfg.Peers != nil && s.cfg.PeersOnly }

// newPeerServer is the server of peers' connections (nil without
// Peers): the API's handler with HTTPServer's timeouts, HTTP/1.1 only,
// its requests marked as having come from a peer. The TLS of a peer
// connection secures the hop between nodes, not the client's request, so
// handlers do not see it: the client's scheme comes in X-Forwarded-Proto
// (see stamp).
func (s *Server) newPeerServer() *http.Server {
	if s.cfg.Peers == nil {
		return nil
	}
	h := s.Handler()
	srv := s.httpServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.TLS = nil
		h.ServeHTTP(w, r)
	}))
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, peerConnKey{}, true)
	}
	return srv
}

// servePeers starts serving peers' connections, once. It waits for the
// first HTTPServer call: by then the protocols are mounted, and Echo's
// routes must not change while it serves.
func (s *Server) servePeers() {
	if s.peerSrv == nil {
		return
	}
	s.peersOnce.Do(func() {
		ln := s.cfg.Peers.PeerListener()
		s.log.Info("serving peers' requests on the cluster port", "addr", ln.Addr().String())
		go func() {
			if err := s.peerSrv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("serving peers' requests failed", "addr", ln.Addr().String(), "err", err)
			}
		}()
	})
}

// PeerGet sends GET path to the member m and returns its answer, which
// the caller closes. It goes over the transport every exchange between
// nodes uses (see newLeaderProxy), is never relayed, and carries the
// request id of ctx, if any. Redirects are not followed.
func (s *Server) PeerGet(ctx context.Context, m clusterapi.Member, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(leaderURL(s.proxy.memberAddr(m)), "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	s.signPeer(req.Header, http.MethodGet, path)
	if id := logging.RequestID(ctx); id != "" {
		req.Header.Set(HeaderRequestID, id)
	}
	return s.proxy.client.Do(req)
}

// maxStatusBytes bounds a member's status answer.
const maxStatusBytes = 4 << 20

// PeerStatus asks member m for its status (GET /v1/cluster) over the
// connections between nodes: the status page's members and the
// replication layer's health checks (autopilot) ask this way.
func (s *Server) PeerStatus(ctx context.Context, m clusterapi.Member) (clusterapi.Status, error) {
	var st clusterapi.Status
	resp, err := s.PeerGet(ctx, m, "/v1/cluster")
	if err != nil {
		return st, fmt.Errorf("unreachable: %w", unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxStatusBytes)).Decode(&st); err != nil {
		return st, fmt.Errorf("answered an unreadable status: %w", err)
	}
	return st, nil
}

// unwrapURLError drops the "Get <url>:" an HTTP client's errors start
// with (callers name the address already).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
