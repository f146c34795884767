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
}

// Mount registers a protocol's route group and returns it for the
// protocol to add its routes to; protocols are mounted before the server
// serves. A protocol's handlers translate only: reads take their state
// from State, writes are built with Write, and errors are returned for
// the group's mapping to render.
func (s *Server) Mount(g Group) *echo.Group {
	s.groups = append(s.groups, g)
	slices.SortStableFunc(s.groups, func(a, b Group) int { return cmp.Compare(len(b.Prefix), len(a.Prefix)) })
	if g.ToLeader {
		return s.e.Group(g.Prefix, s.ToLeader)
	}
	return s.e.Group(g.Prefix)
}

// groupOf returns the group that owns a path; ok is false when none does.
func (s *Server) groupOf(path string) (g Group, ok bool) {
	for _, g := range s.groups {
		if g.Prefix == "" || path == g.Prefix || strings.HasPrefix(path, g.Prefix+"/") {
			return g, true
		}
	}
	return Group{}, false
}

// streams reports whether the request's body is streamed (no size limit).
func (s *Server) streams(c echo.Context) bool {
	path := c.Request().URL.Path
	g, ok := s.groupOf(path)
	return ok && slices.ContainsFunc(g.Streaming, func(p string) bool { return g.Prefix+p == path })
}

// relays reports whether a follower may forward the request over the
// shared relay connection.
func (s *Server) relays(path string) bool {
	g, ok := s.groupOf(path)
	return ok && g.Relay
}
