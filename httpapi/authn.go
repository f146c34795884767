package httpapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/auth"
)

// Authentication. The node a request enters at authenticates its caller
// from the credential the request carries (authenticate), before the
// request goes on to the leader: a request that needs a credential and
// has none, or a wrong one, is answered there. A follower forwarding the
// request names the caller it authenticated in a header that it signs
// with the cluster key (signForward); the leader believes that header only
// when the signature verifies, and re-checks that the token or signing
// key behind it still exists (auth.Still), so a revoked token is refused
// at once everywhere.

// Headers of authenticated forwarding.
const (
	// HeaderIdentity carries the caller a forwarding peer authenticated.
	HeaderIdentity = "X-Raftcat-Identity"
	// HeaderPeerSignature is a peer's signature over a forwarded request.
	HeaderPeerSignature = "X-Raftcat-Peer-Signature"
)

const (
	identityKey   = "raftcat.identity"
	clientAddrKey = "raftcat.client"
)

var errNoCredential = errors.New("This route needs a credential: send Authorization: Bearer <token>.")

// IdentityOf is the identity the request was authenticated as.
func IdentityOf(c echo.Context) (auth.Identity, bool) {
	id, ok := c.Get(identityKey).(auth.Identity)
	return id, ok
}

func setIdentity(c echo.Context, id auth.Identity) {
	c.Set(identityKey, id)
	SetCaller(c, id.Principal)
}

// authRequired reports whether API routes need a credential.
func (s *Server) authRequired() bool { return s.cfg.Auth != nil && s.cfg.Auth.Required() }

// Credential is how a group finds the credential of a request.
type Credential func(c echo.Context) (string, error)

// BearerCredential reads Authorization: Bearer.
func BearerCredential(c echo.Context) (string, error) { return bearer(c.Request()), nil }

func bearer(r *http.Request) string {
	h := r.Header.Get(echo.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// authenticate finds out who the caller is (see the top of this file).
// With Config.PeersOnly, peers send over the cluster port only: a request on
// the client port that claims to come from one is refused.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Header.Get(HeaderPeerSignature) != "" || r.Header.Get(HeaderIdentity) != "" || r.Header.Get(HeaderForwarded) != "" {
			if s.peersOnly() && !viaPeer(r) {
				return s.forged(c, r.Header.Get(HeaderForwarded), errClientPort)
			}
			if err := s.identifyPeer(c); err != nil {
				return err
			}
			return next(c)
		}
		c.Set(clientAddrKey, remoteHost(r))
		if err := s.identify(c); err != nil {
			return err
		}
		return next(c)
	}
}

// identify authenticates a client's credential, if the route takes one.
func (s *Server) identify(c echo.Context) error {
	rule, _ := s.ruleOf(c)
	if s.cfg.Auth == nil || rule.kind == rulePublic || rule.kind == ruleSelf {
		return nil
	}
	cred, err := s.credentialOf(c)
	if err != nil {
		return err
	}
	if cred == "" {
		if s.authRequired() {
			return s.unauthenticated(c, "missing", errNoCredential)
		}
		return nil
	}
	addr, now := ClientAddr(c), time.Now()
	if !s.authRequired() { // a wrong credential leaves the caller anonymous
		if id, err := s.cfg.Auth.Authenticate(c.Request().Context(), s.staleState(), cred, now); err == nil {
			setIdentity(c, id)
		}
		return nil
	}
	if blocked, wait := s.limiter.Blocked(addr, now); blocked {
		return s.throttled(c, wait)
	}
	id, err := s.authenticateCredential(c, cred, now)
	if err != nil {
		s.limiter.Failed(addr, now)
		return s.unauthenticated(c, auth.Reason(err), fmt.Errorf("The credential was refused: %w.", err))
	}
	setIdentity(c, id)
	return nil
}

// authenticateCredential verifies a credential by this node's state. A
// follower that does not know it catches up with the leader once and
// tries again: a token created (or a key rotated) just before the request
// was sent may not have reached this node yet.
func (s *Server) authenticateCredential(c echo.Context, cred string, now time.Time) (auth.Identity, error) {
	ctx := c.Request().Context()
	st, _ := s.cluster.StaleState()
	id, err := s.cfg.Auth.Authenticate(ctx, st, cred, now)
	if (err == nil && id.Kind != auth.KindBootstrap) || s.cluster.IsLeader() {
		return id, err
	}
	idx, ferr := s.reads.fetchOnce() // the bootstrap identity, too, may be out of date here
	if ferr != nil || s.cluster.WaitApplied(ctx, idx) != nil {
		return id, err
	}
	st, _ = s.cluster.StaleState()
	return s.cfg.Auth.Authenticate(ctx, st, cred, now)
}

func (s *Server) staleState() *fsm.State {
	st, _ := s.cluster.StaleState()
	return st
}

// credentialOf finds the request's credential as its group says.
func (s *Server) credentialOf(c echo.Context) (string, error) {
	if g, ok := s.groupOf(c.Request().URL.Path); ok && g.Credential != nil {
		return g.Credential(c)
	}
	return bearer(c.Request()), nil
}

// identifyPeer believes the identity a peer forwarded when its signature
// verifies with the cluster key.
func (s *Server) identifyPeer(c echo.Context) error {
	r := c.Request()
	if s.cfg.Peer == nil {
		if r.Header.Get(HeaderIdentity) != "" || r.Header.Get(HeaderPeerSignature) != "" {
			return s.forged(c, "", errors.New("this node has no cluster key, so it takes no forwarded identity"))
		}
		c.Set(clientAddrKey, remoteHost(r))
		return s.identify(c) // no cluster key: forwarded requests are taken as before
	}
	signed := auth.Signed{Node: r.Header.Get(HeaderForwarded), Method: r.Method, URI: r.URL.RequestURI()}
	if err := signed.ParseEnvelope(r.Header.Get(HeaderIdentity)); err != nil {
		return s.forged(c, signed.Node, fmt.Errorf("malformed identity header: %v", err))
	}
	if err := s.cfg.Peer.Verify(signed, r.Header.Get(HeaderPeerSignature), time.Now()); err != nil {
		return s.forged(c, signed.Node, err)
	}
	c.Set(clientAddrKey, signed.Client)
	if signed.Identity != nil {
		setIdentity(c, *signed.Identity)
	}
	return nil
}

// forged refuses a request claiming to come from a peer that cannot
// prove it.
func (s *Server) forged(c echo.Context, node string, err error) error {
	r := c.Request()
	s.metrics.peerRefusals.Inc()
	s.log.WarnContext(r.Context(), "refused a request claiming to come from a cluster peer", "remote", r.RemoteAddr,
		"claimed_node", node, "method", r.Method, "path", r.URL.Path, "err", err)
	return echo.NewHTTPError(http.StatusForbidden, "The request claims to come from a cluster peer, which it cannot prove: "+err.Error())
}

// unauthenticated is the 401 of a request without a valid credential.
func (s *Server) unauthenticated(c echo.Context, reason string, err error) error {
	s.AuthFailed(c, reason)
	v := `Bearer realm="raftcat"`
	if reason != "missing" {
		v += `, error="invalid_token"`
	}
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, v)
	return echo.NewHTTPError(http.StatusUnauthorized, err.Error())
}

// throttled is the 429 of an address that failed to authenticate too often.
func (s *Server) throttled(c echo.Context, wait time.Duration) error {
	s.AuthFailed(c, "throttled")
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)))
	return echo.NewHTTPError(http.StatusTooManyRequests, "Too many failed authentications from this address; retry later.")
}

// ClientAddr is the address of the client that sent the request (the
// one a forwarding peer names, for forwarded requests).
func ClientAddr(c echo.Context) string {
	if a, ok := c.Get(clientAddrKey).(string); ok && a != "" {
		return a
	}
	return remoteHost(c.Request())
}

// remoteHost is the host of the connection's far end (headers such as
// X-Forwarded-For are the client's to write, so they are not believed).
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// signForward signs a request this node forwards: the caller it
// authenticated and the client's address, under the cluster key.
func (s *Server) signForward(c echo.Context, h http.Header, method, uri string) {
	if s.cfg.Peer == nil {
		return
	}
	signed := auth.Signed{Node: s.cluster.ID(), Method: method, URI: uri, Client: ClientAddr(c)}
	if id, ok := IdentityOf(c); ok {
		signed.Identity = &id
	}
	s.signHeaders(h, signed)
}

// signPeer signs a request of this node's own to a peer.
func (s *Server) signPeer(h http.Header, method, uri string) {
	if s.cfg.Peer == nil {
		return
	}
	s.signHeaders(h, auth.Signed{Node: s.cluster.ID(), Method: method, URI: uri,
		Identity: &auth.Identity{Principal: "node:" + s.cluster.ID(), Kind: auth.KindPeer}})
}

func (s *Server) signHeaders(h http.Header, signed auth.Signed) {
	signed.Seal()
	h.Set(HeaderForwarded, signed.Node)
	h.Set(HeaderIdentity, signed.Envelope())
	h.Set(HeaderPeerSignature, s.cfg.Peer.Sign(signed, time.Now()))
}

// relayUpgradeAllowed checks that a relay upgrade comes from a peer.
func (s *Server) relayUpgradeAllowed(r *http.Request) error {
	if s.cfg.Peer == nil {
		return nil
	}
	signed := auth.Signed{Node: r.Header.Get(HeaderForwarded), Method: r.Method, URI: r.URL.RequestURI()}
	if err := signed.ParseEnvelope(r.Header.Get(HeaderIdentity)); err != nil {
		return err
	}
	return s.cfg.Peer.Verify(signed, r.Header.Get(HeaderPeerSignature), time.Now())
}
