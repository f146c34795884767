package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/raftcat/raftcat/internal/logging"
)

// PeerGet sends GET path to the peer whose HTTP address is httpAddr
// (host:port or a URL, as gossip advertises it) and returns its answer,
// which the caller closes. It goes over the transport every exchange
// between nodes uses (see newLeaderProxy), is never relayed, and carries
// the request id of ctx, if any. Redirects are not followed.
func (s *Server) PeerGet(ctx context.Context, httpAddr, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(leaderURL(httpAddr), "/")+path, nil)
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
