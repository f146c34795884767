package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server accepts relay connections and serves each relayed request with
// Handler, as if it had arrived on its own connection.
type Server struct {
	Handler http.Handler
	// MaxFrame bounds one relayed request (0: the package's MaxFrame).
	// A larger one reaches Handler with its head only (request line and
	// headers, Content-Length included) and an empty body, so Handler can
	// refuse it; the rest of it is skipped.
	MaxFrame int
	// MaxConcurrent bounds the requests served at once per connection
	// (0: 1024); beyond it the server stops reading until one finishes.
	MaxConcurrent int
	// FrameTimeout bounds how long one frame may take to arrive once its
	// first byte has (0: DefaultFrameTimeout). A peer that stops in the
	// middle of a frame loses the connection. Between frames a
	// connection may stay idle.
	FrameTimeout time.Duration

	mu      sync.Mutex
	conns   map[*serverConn]struct{}
	closing bool
	served  uint64
	pool    *workers
}

// Stats counts the relay connections open now and the requests they carried.
type Stats struct {
	Connections int    `json:"connections"`
	Requests    uint64 `json:"requests"`
}

// Stats returns the server's counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Connections: len(s.conns), Requests: s.served}
}

// IsUpgrade reports whether r asks to open a relay connection.
func IsUpgrade(r *http.Request) bool {
	return r.URL.Path == Path && strings.EqualFold(r.Header.Get("Upgrade"), protocol)
}

type serverConn struct {
	conn     net.Conn
	out      combiner
	slots    chan struct{} // one per request being served
	done     chan struct{} // closed when the connection is closed
	handlers sync.WaitGroup
	goAway   sync.Once

	mu       sync.Mutex
	draining bool   // shutting down: frames read from now on are not served
	last     uint64 // id of the last request served
}

// ServeHTTP upgrades the request's connection and serves relayed requests
// on it until it closes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !IsUpgrade(r) {
		http.Error(w, "relay: expected Upgrade: "+protocol, http.StatusUpgradeRequired)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "relay: cannot take over the connection: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_ = conn.SetDeadline(time.Time{}) // the HTTP server's timeouts were for one request
	sc := &serverConn{conn: conn, out: combiner{w: conn}, slots: make(chan struct{}, s.maxConcurrent()),
		done: make(chan struct{})}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		conn.Close() // the client sees a failed upgrade: nothing was relayed
		return
	}
	if s.conns == nil {
		s.conns = map[*serverConn]struct{}{}
	}
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
		conn.Close()
		close(sc.done)
	}()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", protocol)
	if err := rw.Flush(); err != nil {
		return
	}
	s.serve(r.Context(), sc, rw.Reader)
}

// countServed counts a request served and returns the worker pool the
// server's connections share.
func (s *Server) countServed() *workers {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served++
	if s.pool == nil {
		s.pool = newWorkers(workerIdle)
	}
	return s.pool
}

func (s *Server) maxConcurrent() int {
	if s.MaxConcurrent > 0 {
		return s.MaxConcurrent
	}
	return 1024
}

func (s *Server) maxFrame() int {
	if s.MaxFrame > 0 {
		return s.MaxFrame
	}
	return MaxFrame
}

type relayedKey struct{}

// Relayed reports whether r came in over a relay connection: a peer's
// (or a client's that opened one) multiplexed connection, not a plain
// HTTP exchange.
func Relayed(r *http.Request) bool {
	relayed, _ := r.Context().Value(relayedKey{}).(bool)
	return relayed
}

// serve reads frames until the connection ends, serving each on a worker
// of its own, which writes its answer (see combiner). Once reading stops, requests
// still being served see their context cancelled.
func (s *Server) serve(parent context.Context, sc *serverConn, br *bufio.Reader) {
	ctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(parent), relayedKey{}, true))
	remote := sc.conn.RemoteAddr().String()
	for {
		id, payload, err := s.readRequest(sc.conn, br)
		if err != nil {
			break
		}
		sc.mu.Lock()
		if sc.draining { // not served: the going-away frame says so
			sc.mu.Unlock()
			continue
		}
		if id <= sc.last { // ids only grow: a broken peer
			sc.mu.Unlock()
			break
		}
		sc.last = id
		sc.handlers.Add(1)
		sc.mu.Unlock()
		pool := s.countServed()
		sc.slots <- struct{}{}
		pool.run(func() {
			defer sc.handlers.Done()
			answer := serveFrame(ctx, s.Handler, remote, id, payload)
			<-sc.slots
			sc.answer(answer)
		})
	}
	cancel()
	sc.handlers.Wait() // every answer is written (or its write failed)
	sc.out.close()
}

// DefaultFrameTimeout is Server.FrameTimeout's default.
const DefaultFrameTimeout = 30 * time.Second

func (s *Server) frameTimeout() time.Duration {
	if s.FrameTimeout > 0 {
		return s.FrameTimeout
	}
	return DefaultFrameTimeout
}

// readRequest waits, without a deadline, for the next frame to start, then
// reads it whole within the frame timeout. An oversized frame is served
// from its head alone, to keep the connection for the requests sharing it
// (its Content-Length lets the handler refuse it as too large); the rest
// of its body is skipped, within the same deadline.
func (s *Server) readRequest(conn net.Conn, br *bufio.Reader) (uint64, []byte, error) {
	if _, err := br.Peek(1); err != nil {
		return 0, nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(s.frameTimeout()))
	defer conn.SetReadDeadline(time.Time{})
	id, payload, err := readFrame(br, s.maxFrame())
	var tooLarge *frameTooLarge
	if errors.As(err, &tooLarge) {
		payload, err = readHead(br, tooLarge.size)
	}
	return id, payload, err
}

// headLimit is how much of an oversized request is kept: enough for its
// request line and headers.
const headLimit = 64 << 10

// readHead reads the first bytes of an oversized frame's payload and
// discards the rest.
func readHead(br *bufio.Reader, size int64) ([]byte, error) {
	head := make([]byte, min(size, headLimit))
	if _, err := io.ReadFull(br, head); err != nil {
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, br, size-int64(len(head))); err != nil {
		return nil, err
	}
	return head, nil
}

// answer writes one answer frame. After a write fails the connection is
// closed: the client fails the requests still waiting, and later answers
// are dropped.
func (sc *serverConn) answer(frame []byte) {
	if err := sc.out.send(frame); err != nil && !errors.Is(err, errCombinerClosed) {
		sc.conn.Close()
	}
}

// sendGoAway stops serving new requests on the connection, and once every
// request served has been answered, tells the client the last one served.
func (sc *serverConn) sendGoAway() {
	sc.goAway.Do(func() {
		sc.mu.Lock()
		sc.draining = true
		last := sc.last
		sc.mu.Unlock()
		sc.handlers.Wait() // no handler starts once draining is set
		frame := appendFrame(nil, goAwayID, 8)
		sc.answer(binary.BigEndian.AppendUint64(frame, last))
	})
}

// serveFrame parses one relayed request, serves it and returns the framed
// answer. A request that cannot be parsed gets a 400, a handler that
// panics a 500.
func serveFrame(ctx context.Context, h http.Handler, remote string, id uint64, payload []byte) (answer []byte) {
	rec := &recorder{header: http.Header{}}
	defer func() {
		if p := recover(); p != nil {
			rec = &recorder{header: http.Header{}}
			rec.fail(http.StatusInternalServerError, fmt.Sprintf("relay: the request's handler failed: %v", p))
			answer = rec.frame(id)
		}
	}()
	br := readers.Get().(*bufio.Reader)
	defer func() { br.Reset(nil); readers.Put(br) }()
	br.Reset(bytes.NewReader(payload))
	req, err := http.ReadRequest(br)
	if err != nil {
		rec.fail(http.StatusBadRequest, fmt.Sprintf("relay: malformed request: %v", err))
		return rec.frame(id)
	}
	req.RemoteAddr = remote
	rec.head = req.Method == http.MethodHead
	h.ServeHTTP(rec, req.WithContext(ctx))
	return rec.frame(id)
}

// recorder collects a handler's answer in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	head   bool // answers a HEAD request: no body, the Content-Length declared
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// Flush is a no-op: the answer is sent whole.
func (r *recorder) Flush() {}

func (r *recorder) fail(status int, msg string) {
	r.header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
	r.status = status
	r.body.Reset()
	r.body.WriteString(msg + "\n")
}

// frame encodes the answer as an HTTP/1.1 response behind a frame header.
func (r *recorder) frame(id uint64) []byte {
	r.WriteHeader(http.StatusOK)
	if r.body.Len() > MaxFrame-64<<10 {
		r.fail(http.StatusBadGateway, fmt.Sprintf("relay: the answer (%d bytes) is too large to relay; ask the leader directly", r.body.Len()))
	}
	var b bytes.Buffer
	b.Grow(headerLen + 256 + r.body.Len())
	b.Write(make([]byte, headerLen))
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", r.status, http.StatusText(r.status))
	_ = r.header.WriteSubset(&b, hopByHop)
	b.WriteString("Content-Length: ")
	if declared := r.header.Get("Content-Length"); r.head && declared != "" {
		b.WriteString(declared) // what the GET would carry; the client reads no body
		b.WriteString("\r\n\r\n")
	} else {
		b.WriteString(strconv.Itoa(r.body.Len()))
		b.WriteString("\r\n\r\n")
		b.Write(r.body.Bytes())
	}
	out := b.Bytes()
	appendFrame(out[:0], id, len(out)-headerLen)
	return out
}

// Shutdown stops serving new relayed requests: each connection finishes
// the requests it is serving, answers them, tells the client which was the
// last one served (the client may send the others elsewhere) and closes
// once the client has. Connections still open when ctx ends are closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	conns := slices.Collect(maps.Keys(s.conns))
	s.mu.Unlock()
	for _, sc := range conns {
		go sc.sendGoAway()
	}
	for _, sc := range conns {
		select {
		case <-sc.done:
		case <-ctx.Done():
			for _, sc := range conns {
				sc.conn.Close()
			}
			return ctx.Err()
		}
	}
	return nil
}
