package httpapi

import (
	"cmp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// Group is one protocol's share of the server: the path prefix all its
// routes live under, and how the core treats its requests. The group whose
// prefix is the longest one matching a request's path owns the request:
// its Errors render the request's errors, and its Relay decides how a
// follower forwards it. A group with an empty prefix owns every path no
// other group claims.
type Group struct {
	// Name is the protocol's name in metrics (the protocol label).
	Name string
	// Prefix is the path every route of the group starts with, without a
	// trailing slash ("" for root-level endpoints).
	Prefix string
	// Errors renders the group's errors in its protocol's envelope. It
	// must map every fsm.Code.
	Errors ErrorMapping
	// ToLeader sends every request of the group to the leader (stale reads
	// excepted, see ToLeader). Without it, routes opt in one by one by
	// adding the ToLeader middleware.
	ToLeader bool
	// Relay lets a follower forward the group's requests over the relay
	// connection it shares with the leader (their bodies are then held in
	// memory); otherwise each goes in its own plain HTTP exchange, which
	// suits answers that stream, such as a snapshot download.
	Relay bool
	// Streaming lists paths (below Prefix) whose request bodies are
	// streamed, not held: they are exempt from the body size limit.
	Streaming []string
	// Credential finds a request's credential (nil: Authorization:
	// Bearer).
	Credential Credential
}

// Mount registers a protocol's route group and returns it for the
// protocol to add its routes to; protocols are mounted before the server
// serves. A protocol's handlers translate only: reads take their state
// from State, writes are built with Write, and errors are returned for
// the group's mapping to render.
//
// Each route is registered with the Rule a caller must meet (see
// access.go). The returned group has no middleware of its own: an Echo group with
// middleware catches every path below its prefix, which turns a known
// path with a wrong method into a 404 instead of a 405 with an Allow
// header. A group's ToLeader is applied by groupToLeader instead.
func (s *Server) Mount(g Group) *Routes {
	s.groups = append(s.groups, g)
	slices.SortStableFunc(s.groups, func(a, b Group) int { return cmp.Compare(len(b.Prefix), len(a.Prefix)) })
	return &Routes{s: s, g: s.e.Group(g.Prefix), prefix: g.Prefix}
}

// groupToLeader sends the requests of groups mounted with ToLeader to the
// leader, whatever the router made of them: an unknown path or a wrong
// method is answered by the leader as well, so every node answers it alike.
func (s *Server) groupToLeader(next echo.HandlerFunc) echo.HandlerFunc {
	toLeader := s.ToLeader(next)
	return func(c echo.Context) error {
		if g, ok := s.groupOf(c.Request().URL.Path); ok && g.ToLeader {
			return toLeader(c)
		}
		return next(c)
	}
}

// groupOf returns the group that owns a path; ok is false when none does.
func (s *Server) groupOf(path string) (g Group, ok bool) {
	for _, g := range s.groups {
		if under(path, g.Prefix) {
			return g, true
		}
	}
	return Group{}, false
}

// under reports whether path is prefix or below it (every path is below
// the empty prefix). It runs several times per request, so it builds no
// string.
func under(path, prefix string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && (prefix == "" || rest == "" || rest[0] == '/')
}

// streams reports whether the request's body is streamed (no size limit).
func (s *Server) streams(c echo.Context) bool {
	path := c.Request().URL.Path
	g, ok := s.groupOf(path)
	if !ok {
		return false
	}
	rest, _ := strings.CutPrefix(path, g.Prefix)
	return slices.Contains(g.Streaming, rest)
}

// relays reports whether a follower may forward the request over the
// shared relay connection.
func (s *Server) relays(path string) bool {
	g, ok := s.groupOf(path)
	return ok && g.Relay
}
