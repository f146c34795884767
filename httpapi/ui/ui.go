// Package ui serves a node's status page at /ui/: the cluster's members
// with their role, health and progress, the changes of leader this node
// saw, its commands applied per second and p99 write latency over the
// last minutes, the tables by format and the warnings and errors it
// logged. The page is plain HTML, CSS and JavaScript embedded in the
// binary; it polls /ui/api/overview, which every node answers from its
// own view (requests are never sent to the leader), asking the other
// members for their own progress.
package ui

import (
	"time"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/admin"
	"github.com/raftcat/raftcat/internal/logging"
)

// Prefix is where the status page is served.
const Prefix = "/ui"

// Source is what the page needs from the node: its view of the cluster,
// the commands it applied, its objects, and when it stops.
type Source interface {
	Status() clusterapi.Status
	// CommandsApplied counts the commands the node applied since it started.
	CommandsApplied() uint64
	// ObjectCounts are the node's objects by kind and tables by format.
	ObjectCounts() (objects, tables map[string]int)
	// Done closes when the node has stopped: the page's sampler stops then.
	Done() <-chan struct{}
}

// Config configures the status page.
type Config struct {
	// Recent holds the warnings and errors the node logged (nil: none are
	// kept, and the page says so).
	Recent *logging.Recent
}

// Server serves the status page of one node.
type Server struct {
	core    *httpapi.Server
	src     Source
	recent  *logging.Recent
	metrics *metrics
}

// Register mounts the status page on the core and samples the commands
// the node applies, once a second, until the node is done.
func Register(core *httpapi.Server, src Source, cfg Config) *Server {
	s := &Server{core: core, src: src, recent: cfg.Recent, metrics: newMetrics()}
	s.routes(core.Mount(httpapi.Group{Name: "ui", Prefix: Prefix, Errors: admin.Errors()}))
	core.ObserveRequests(s.metrics.observeRequest)
	go s.metrics.sample(src, time.Second)
	return s
}

// routes: the page and its static files hold no data and are public; the
// overview they fetch needs a credential when authentication is on.
func (s *Server) routes(e *httpapi.Routes) {
	e.GET("", httpapi.Public(), redirectToIndex)
	e.GET("/", httpapi.Public(), serveIndex)
	e.GET("/static/*", httpapi.Public(), serveStatic)
	e.GET("/api/overview", httpapi.AnyCaller(), s.serveOverview)
}
