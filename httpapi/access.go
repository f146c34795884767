package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/auth"
)

// Access control. Every route declares, where it is registered, what a
// caller needs to use it (a Rule); the core checks it in one place,
// authorize, on the node that serves the request (the leader, or a
// follower answering a read itself), after the node the request entered
// at has authenticated the caller (authenticate). A route registered
// without a rule is refused to everyone but cluster peers.

type ruleKind uint8

const (
	ruleDeny   ruleKind = iota // the zero Rule: nobody but peers
	rulePublic                 // anyone, no credential (health, the OAuth2 token endpoint)
	ruleSelf                   // the protocol authenticates its callers itself (Delta Sharing recipients)
	ruleCaller                 // any authenticated principal; the handler narrows what it shows
	ruleAdmin                  // the metastore admin
	ruleNeeds                  // privileges on securables the request names
)

// Rule is what a route needs of its caller.
type Rule struct {
	kind  ruleKind
	needs func(c echo.Context) ([]access.Need, error)
}

// PeersOnly routes serve cluster peers alone (with authentication on).
func PeersOnly() Rule { return Rule{kind: ruleDeny} }

// Public routes need no credential.
func Public() Rule { return Rule{kind: rulePublic} }

// SelfAuthenticated routes authenticate their callers themselves, with
// credentials of their protocol's own.
func SelfAuthenticated() Rule { return Rule{kind: ruleSelf} }

// AnyCaller routes need an authenticated principal, whoever it is.
func AnyCaller() Rule { return Rule{kind: ruleCaller} }

// AdminOnly routes need the metastore admin.
func AdminOnly() Rule { return Rule{kind: ruleAdmin} }

// Needs routes need what f says the request names: privileges or
// ownership of securables (a body f reads with PeekBody).
func Needs(f func(c echo.Context) ([]access.Need, error)) Rule {
	return Rule{kind: ruleNeeds, needs: f}
}

// NeedOn is the rule of one privilege on the container at path (the
// metastore for an empty path).
func NeedOn(priv string, path func(c echo.Context) ([]string, error)) Rule {
	return Needs(func(c echo.Context) ([]access.Need, error) {
		p, err := path(c)
		return []access.Need{access.On(priv, p...)}, err
	})
}

// NeedOnTable is the rule of one privilege on the table at path.
func NeedOnTable(priv string, path func(c echo.Context) ([]string, error)) Rule {
	return Needs(func(c echo.Context) ([]access.Need, error) {
		p, err := path(c)
		return []access.Need{access.OnTable(priv, p...)}, err
	})
}

// NeedOwner is the rule of owning the securable at path.
func NeedOwner(table bool, path func(c echo.Context) ([]string, error)) Rule {
	return Needs(func(c echo.Context) ([]access.Need, error) {
		p, err := path(c)
		return []access.Need{access.OwnerOf(table, p...)}, err
	})
}

// Params is a path function of route parameters, in order.
func Params(names ...string) func(c echo.Context) ([]string, error) {
	return func(c echo.Context) ([]string, error) {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = c.Param(n)
		}
		return out, nil
	}
}

// Metastore is the path of the metastore.
func Metastore(echo.Context) ([]string, error) { return nil, nil }

// PeekBody decodes the request's JSON body into v and puts the body back
// for the handler. It decodes as BindJSON does (the same decoder, the same
// refusals of duplicate keys and malformed input), so a rule sees the
// names the handler will act on. A body that does not decode is a 400.
func PeekBody(c echo.Context, v any) error {
	r := c.Request()
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	raw, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		return bodyReadError(err)
	}
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := checkBody(raw); err != nil {
		return err
	}
	if err := gojson.Unmarshal(raw, v); err != nil {
		return JSONError(err)
	}
	return nil
}

// Routes registers a group's routes, each with its Rule.
type Routes struct {
	s      *Server
	g      *echo.Group
	prefix string
}

// Group returns the routes below a further prefix.
func (r *Routes) Group(prefix string) *Routes {
	return &Routes{s: r.s, g: r.g.Group(prefix), prefix: r.prefix + prefix}
}

// Add registers a route needing rule; middleware m runs before the check.
func (r *Routes) Add(method, path string, rule Rule, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	r.s.rules[method+" "+r.prefix+path] = rule
	return r.g.Add(method, path, h, append(m, r.s.authorize(rule))...)
}

// GET registers a GET route.
func (r *Routes) GET(path string, rule Rule, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.Add(http.MethodGet, path, rule, h, m...)
}

// HEAD registers a HEAD route.
func (r *Routes) HEAD(path string, rule Rule, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.Add(http.MethodHead, path, rule, h, m...)
}

// POST registers a POST route.
func (r *Routes) POST(path string, rule Rule, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.Add(http.MethodPost, path, rule, h, m...)
}

// PATCH registers a PATCH route.
func (r *Routes) PATCH(path string, rule Rule, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.Add(http.MethodPatch, path, rule, h, m...)
}

// DELETE registers a DELETE route.
func (r *Routes) DELETE(path string, rule Rule, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.Add(http.MethodDelete, path, rule, h, m...)
}

// Any registers a route for every method.
func (r *Routes) Any(path string, rule Rule, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	for _, method := range anyMethods {
		r.Add(method, path, rule, h, m...)
	}
}

var anyMethods = []string{http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions,
	http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace}

// ruleOf is the rule of the route a request matched, and whether it has one.
func (s *Server) ruleOf(c echo.Context) (Rule, bool) {
	r, ok := s.rules[c.Request().Method+" "+c.Path()]
	return r, ok
}

// HasRule reports whether the route method path was registered with a
// rule (route templates as Routes lists them).
func (s *Server) HasRule(method, path string) bool {
	_, ok := s.rules[method+" "+path]
	return ok
}

// authorize is the check of one route's rule.
func (s *Server) authorize(rule Rule) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := s.check(c, rule); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// check decides a request against its route's rule.
func (s *Server) check(c echo.Context, rule Rule) error {
	if rule.kind == rulePublic || rule.kind == ruleSelf {
		return nil
	}
	id, known := IdentityOf(c)
	if known && id.Kind == auth.KindPeer {
		return nil
	}
	if !s.authRequired() {
		return nil
	}
	if !known {
		return s.unauthenticated(c, "missing", errNoCredential)
	}
	st, err := s.checkState(c)
	if err != nil {
		return err
	}
	if err := auth.Still(st, id, time.Now()); err != nil {
		if id, err = s.reauthenticate(c, st, err); err != nil {
			return s.unauthenticated(c, auth.Reason(err), fmt.Errorf("The credential for %s is no longer valid: %w.", id.Principal, err))
		}
	}
	if id.Kind == auth.KindBootstrap || access.IsAdmin(st, id.Principal) {
		return nil
	}
	return s.checkRule(c, st, id.Principal, rule)
}

// checkState is the state a request is checked against: on the leader,
// one that holds every grant and revocation acknowledged before the
// request came (a leader just elected may not have applied its
// predecessor's last entries yet: it waits until it has, which costs no
// round trip); elsewhere, the state the node serves the read from.
func (s *Server) checkState(c echo.Context) (*fsm.State, error) {
	if e, ok := s.cluster.(interface{ Established(context.Context) error }); ok && s.cluster.IsLeader() && !isStaleRead(c.Request()) {
		if err := e.Established(c.Request().Context()); err != nil {
			return nil, err
		}
	}
	st, _ := s.cluster.StaleState()
	return st, nil
}

// reauthenticate verifies the request's own credential by st when the
// identity a peer forwarded no longer holds by it (the peer had not yet
// applied what made it so: the admin's creation, say); stale is why.
func (s *Server) reauthenticate(c echo.Context, st *fsm.State, stale error) (auth.Identity, error) {
	old, _ := IdentityOf(c)
	cred, _ := s.credentialOf(c)
	if cred == "" {
		return old, stale
	}
	id, err := s.cfg.Auth.Authenticate(c.Request().Context(), st, cred, time.Now())
	if err != nil {
		return old, err
	}
	setIdentity(c, id)
	return id, nil
}

func (s *Server) checkRule(c echo.Context, st *fsm.State, principal string, rule Rule) error {
	switch rule.kind {
	case ruleCaller:
		return nil
	case ruleNeeds:
		needs, err := rule.needs(c)
		if err != nil {
			return err
		}
		for _, n := range needs {
			if err := access.Check(st, principal, n); err != nil {
				return err
			}
		}
		return nil
	case ruleAdmin:
		return fsm.Errf(fsm.CodePermissionDenied, "Principal %s is not a metastore admin.", principal)
	}
	return fsm.Errf(fsm.CodePermissionDenied, "This route is served to cluster peers only.")
}

// unrestricted reports whether the request's caller may see and do
// anything: authentication is off, or the caller is a peer or the
// bootstrap admin.
func (s *Server) unrestricted(c echo.Context) bool {
	id, ok := IdentityOf(c)
	return !s.authRequired() || (ok && (id.Kind == auth.KindPeer || id.Kind == auth.KindBootstrap))
}

// Allowed reports whether the request's caller holds n (lists use it to
// show only what the caller may see). Without authentication required,
// everything is allowed.
func (s *Server) Allowed(c echo.Context, st *fsm.State, n access.Need) bool {
	id, ok := IdentityOf(c)
	if s.unrestricted(c) {
		return true
	}
	return ok && access.Allowed(st, id.Principal, n)
}

// Visible reports whether a list shows the caller the securable at path.
func (s *Server) Visible(c echo.Context, st *fsm.State, table bool, path ...string) bool {
	id, ok := IdentityOf(c)
	if s.unrestricted(c) {
		return true
	}
	return ok && access.Visible(st, id.Principal, table, path...)
}

// IsAdmin reports whether the request's caller is a metastore admin (or
// authentication is off).
func (s *Server) IsAdmin(c echo.Context, st *fsm.State) bool {
	id, ok := IdentityOf(c)
	if s.unrestricted(c) {
		return true
	}
	return ok && access.IsAdmin(st, id.Principal)
}

// FullName is a path function of a dotted full name in a route parameter
// ("catalog.schema.table").
func FullName(param string) func(c echo.Context) ([]string, error) {
	return func(c echo.Context) ([]string, error) { return strings.Split(c.Param(param), "."), nil }
}

// Query is a path function of query parameters, in order; it stops at the
// first one missing (the handler refuses the request for it).
func Query(names ...string) func(c echo.Context) ([]string, error) {
	return func(c echo.Context) ([]string, error) {
		var out []string
		for _, n := range names {
			v := c.QueryParam(n)
			if v == "" {
				break
			}
			out = append(out, v)
		}
		return out, nil
	}
}

// RuleKind names the rule of a route (method and template as Routes
// lists them): public, self, caller, admin, needs or peers, or "" for a
// route registered without one (then served to peers alone).
func (s *Server) RuleKind(method, path string) string {
	r, ok := s.rules[method+" "+path]
	if !ok {
		return ""
	}
	return [...]string{ruleDeny: "peers", rulePublic: "public", ruleSelf: "self", ruleCaller: "caller", ruleAdmin: "admin", ruleNeeds: "needs"}[r.kind]
}
