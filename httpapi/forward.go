package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/cluster"
)

var errLeaderUnreachable = errors.New("leader unreachable")

// routeToLeader sends every request that needs the leader (writes, and
// reads unless they opt into stale local state) to it. On a follower the
// request is proxied and the client gets the leader's answer; a request
// that was already forwarded once is never forwarded again.
func (s *Server) routeToLeader(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(HeaderServedBy, s.cluster.ID())
		if isStaleRead(c.Request()) || s.cluster.IsLeader() {
			return next(c)
		}
		if c.Request().Header.Get(HeaderForwarded) != "" {
			return fmt.Errorf("%w: forwarded request reached a node that no longer leads", cluster.ErrNotLeader)
		}
		addr, err := s.waitForLeader(c)
		if err != nil {
			return err
		}
		if addr == "" { // this node became the leader while waiting
			return next(c)
		}
		c.Response().Header().Del(HeaderServedBy)
		s.proxy.forward(c, addr)
		return nil
	}
}

// isStaleRead reports whether a request asked for this node's local state.
func isStaleRead(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.EqualFold(r.Header.Get(HeaderConsistency), "stale")
}

// waitForLeader waits (up to LeaderWait) until a leader's HTTP address is
// known. It returns "" if this node is now the leader.
func (s *Server) waitForLeader(c echo.Context) (string, error) {
	deadline := time.Now().Add(s.cfg.LeaderWait)
	for {
		if s.cluster.IsLeader() {
			return "", nil
		}
		addr, err := s.cluster.LeaderHTTPAddr()
		if err == nil {
			return addr, nil
		}
		if time.Now().After(deadline) {
			return "", err
		}
		select {
		case <-c.Request().Context().Done():
			return "", c.Request().Context().Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaderProxy forwards requests over pooled keep-alive connections.
type leaderProxy struct {
	s     *Server
	proxy *httputil.ReverseProxy
}

type targetKey struct{}

func newLeaderProxy(s *Server) *leaderProxy {
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
	}
	p := &leaderProxy{s: s}
	p.proxy = &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(r *httputil.ProxyRequest) {
			target := r.In.Context().Value(targetKey{}).(*url.URL)
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set(HeaderForwarded, s.cluster.ID())
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			c := s.e.NewContext(r, echo.NewResponse(w, s.e))
			s.log.Warn("forward to leader failed", "path", r.URL.Path, "err", err)
			s.handleError(fmt.Errorf("%w: %v", errLeaderUnreachable, err), c)
		},
	}
	return p
}

func (p *leaderProxy) forward(c echo.Context, addr string) {
	target, err := url.Parse(leaderURL(addr))
	if err != nil {
		p.s.handleError(fmt.Errorf("%w: bad leader address %q", errLeaderUnreachable, addr), c)
		return
	}
	r := c.Request()
	ctx := r.Context()
	r = r.WithContext(context.WithValue(ctx, targetKey{}, target))
	p.proxy.ServeHTTP(c.Response(), r)
}

func leaderURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}
