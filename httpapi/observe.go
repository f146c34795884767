package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/relay"
)

// HeaderRequestID names a request across nodes and log lines: a client's
// id is kept, a request without one gets a new one, and the answer always
// carries it. A follower forwards it to the leader with the request.
const HeaderRequestID = "X-Request-Id"

// maxRequestIDLen bounds a client's request id; a longer or unprintable
// one is replaced.
const maxRequestIDLen = 128

// RequestInfo describes one answered request to the observers of a server.
type RequestInfo struct {
	Protocol  string // the owning group's Name ("" for paths no group claims)
	Route     string // the route template, never the raw path ("unmatched" if no route matched)
	Method    string
	Status    int
	Duration  time.Duration
	RequestID string
	// Forwarded is true on the leader for a request a follower forwarded
	// (the follower counts it too, as the node the client reached).
	Forwarded bool
}

// Write reports whether the request asked to change something.
func (r RequestInfo) Write() bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// ObserveRequests registers f to be called after every request this node
// answers. Observers are registered while protocols are mounted, before
// the server serves.
func (s *Server) ObserveRequests(f func(RequestInfo)) { s.observers = append(s.observers, f) }

// AuthFailed counts a request its protocol refused for its credentials;
// reason is one of a few fixed words (missing, invalid, expired).
func (s *Server) AuthFailed(c echo.Context, reason string) {
	g, _ := s.groupOf(c.Request().URL.Path)
	s.metrics.authFailures.WithLabelValues(g.Name, reason).Inc()
}

// requestID gives every request its id (see HeaderRequestID), in its
// headers, its answer and its context, which the server's log lines read.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		id := r.Header.Get(HeaderRequestID)
		if !validRequestID(id) {
			id = uuid.NewString()
			r.Header.Set(HeaderRequestID, id)
		}
		c.Response().Header().Set(HeaderRequestID, id)
		c.SetRequest(r.WithContext(logging.ContextWithRequestID(r.Context(), id)))
		return next(c)
	}
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// httpMetrics are the request counters and latencies of one server.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	// forwarded counts the requests this follower sent to the leader, by
	// outcome: answered, unknown_outcome (failed after sending),
	// no_leader (none reachable in time), canceled (the client left).
	forwarded *prometheus.CounterVec
	// authFailures counts requests refused for their credentials.
	authFailures *prometheus.CounterVec
	// peerRefusals counts requests and relay connections refused because
	// they claimed to come from a peer without proving it.
	peerRefusals prometheus.Counter
	// stages times the stages of writes (stages.go).
	stages *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer, relayStats func() relay.Stats) *httpMetrics {
	labels := []string{"protocol", "route", "method", "forwarded"}
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftcat_http_requests_total",
			Help: "HTTP requests answered, by protocol, route template, method, whether a follower forwarded it here, and status code."}, append(labels, "code")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raftcat_http_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer, by protocol, route template, method and whether a follower forwarded it here.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, labels),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "raftcat_http_requests_in_flight",
			Help: "HTTP requests being served now."}),
	}
	m.forwarded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftcat_forwarded_requests_total",
		Help: "Requests this node forwarded to the leader, by outcome: answered, unknown_outcome, no_leader or canceled; leader_moved counts tries a former leader turned back, having done nothing (the request then went on)."}, []string{"outcome"})
	for _, o := range []string{"answered", "unknown_outcome", "no_leader", "canceled", "leader_moved"} {
		m.forwarded.WithLabelValues(o)
	}
	m.authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftcat_auth_failures_total",
		Help: "Requests refused for their credentials, by protocol and reason (missing, invalid, expired, revoked, throttled)."}, []string{"protocol", "reason"})
	m.peerRefusals = prometheus.NewCounter(prometheus.CounterOpts{Name: "raftcat_peer_refusals_total",
		Help: "Forwarded requests and relay connections refused because they claimed to come from a cluster peer without a valid signature, or on the client port when peers have the cluster port."})
	m.stages = newStageSeconds(reg)
	reg.MustRegister(m.requests, m.duration, m.inFlight, m.forwarded, m.authFailures, m.peerRefusals,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "raftcat_relay_connections",
			Help: "Relay connections followers hold open to this node."}, func() float64 { return float64(relayStats().Connections) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "raftcat_relay_requests_total",
			Help: "Requests followers relayed to this node."}, func() float64 { return float64(relayStats().Requests) }))
	return m
}

// observe answers errors itself (so the status is final), then counts
// and times the request and tells the observers.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		if err := next(c); err != nil {
			c.Error(err)
		}
		info := s.requestInfo(c, time.Since(start))
		fwd := strconv.FormatBool(info.Forwarded)
		s.metrics.requests.WithLabelValues(info.Protocol, info.Route, info.Method, fwd, strconv.Itoa(info.Status)).Inc()
		s.metrics.duration.WithLabelValues(info.Protocol, info.Route, info.Method, fwd).Observe(info.Duration.Seconds())
		for _, f := range s.observers {
			f(info)
		}
		return nil
	}
}

func (s *Server) requestInfo(c echo.Context, d time.Duration) RequestInfo {
	r := c.Request()
	info := RequestInfo{Route: c.Path(), Method: boundedMethod(r.Method), Status: c.Response().Status,
		Duration: d, RequestID: r.Header.Get(HeaderRequestID), Forwarded: r.Header.Get(HeaderForwarded) != ""}
	if g, ok := s.groupOf(r.URL.Path); ok {
		info.Protocol = g.Name
	}
	if info.Route == "" || !s.knownRoute(info.Route) {
		info.Route = "unmatched"
	}
	return info
}

// knownRoute reports whether path is a registered route template; the
// set is taken once, when the first request is answered (protocols are
// all mounted by then).
func (s *Server) knownRoute(path string) bool {
	s.routesOnce.Do(func() {
		s.routeSet = map[string]bool{}
		for _, rt := range s.e.Routes() {
			if rt.Method != echo.RouteNotFound {
				s.routeSet[rt.Path] = true
			}
		}
	})
	return s.routeSet[path]
}

// boundedMethod keeps the method label to the methods HTTP defines.
func boundedMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}
