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
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/statecount"
)

// Prefix is where the status page is served.
const Prefix = "/ui"

// Source is what the page needs from the node: its view of the cluster.
// If the source also has a Done() <-chan struct{} method (a cluster node
// does), the page's sampler stops when that channel closes.
type Source interface {
	Status() clusterapi.Status
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
	counts  statecount.Counter
	stop    chan struct{}
	stopped sync.Once
}

// Register mounts the status page on the core and starts sampling the
// commands the node applies, once a second. The sampler runs until Close
// is called or, if src has a Done method, until the node is done.
func Register(core *httpapi.Server, src Source, cfg Config) *Server {
	s := &Server{core: core, src: src, recent: cfg.Recent, metrics: newMetrics(), stop: make(chan struct{})}
	s.routes(core.Mount(httpapi.Group{Name: "ui", Prefix: Prefix, Errors: errorMapping{}}))
	core.ObserveRequests(s.metrics.observeRequest)
	go s.metrics.sample(src, time.Second, s.stop, doneOf(src))
	return s
}

// Close stops the sampler. Idempotent.
func (s *Server) Close() { s.stopped.Do(func() { close(s.stop) }) }

// doneOf returns the channel that closes when src stops, or nil (which
// never closes) if src does not tell.
func doneOf(src Source) <-chan struct{} {
	if d, ok := src.(interface{ Done() <-chan struct{} }); ok {
		return d.Done()
	}
	return nil
}

func (s *Server) routes(e *echo.Group) {
	e.GET("", redirectToIndex)
	e.GET("/", serveIndex)
	e.GET("/static/*", serveStatic)
	e.GET("/api/overview", s.serveOverview)
}
