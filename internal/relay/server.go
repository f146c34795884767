package relay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Server accepts relay connections and serves each relayed request with
// Handler, as if it had arrived on its own connection.
type Server struct {
	Handler http.Handler
	// Refuse answers requests that arrive after Shutdown began (nothing
	// of them is served, so the sender may retry elsewhere).
	Refuse http.Handler

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closing  bool
	inflight int           // requests taken whose answers are not yet written
	drained  chan struct{} // closed when inflight drops to 0 after Shutdown began
	served   uint64
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
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		conn.Close()
		return
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[conn] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", protocol)
	if err := rw.Flush(); err != nil {
		return
	}
	s.serve(r.Context(), conn, rw.Reader)
}

// serve reads frames until the connection fails, serving each in its own
// goroutine; one writer sends the answers. Once reading stops, the
// requests still being served see their context cancelled.
func (s *Server) serve(parent context.Context, conn net.Conn, br *bufio.Reader) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	answers := make(chan []byte, 1024)
	var handlers sync.WaitGroup
	written := make(chan struct{})
	go func() { s.writeAnswers(conn, answers); close(written) }()
	for {
		id, payload, err := readFrame(br)
		if err != nil {
			break
		}
		h := s.begin()
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			answers <- serveFrame(ctx, h, conn.RemoteAddr().String(), id, payload)
		}()
	}
	cancel()
	handlers.Wait()
	close(answers)
	<-written
}

// begin counts a request in and returns the handler that serves it.
func (s *Server) begin() http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight++
	s.served++
	if s.closing {
		return s.Refuse
	}
	return s.Handler
}

// end counts n requests out once their answers are written (or lost with
// their connection).
func (s *Server) end(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight -= n
	if s.inflight == 0 && s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
}

// writeAnswers writes answers until the channel closes, flushing only
// when none is waiting. After a write fails it still takes (and drops)
// every answer, so no handler blocks.
func (s *Server) writeAnswers(conn net.Conn, answers <-chan []byte) {
	bw := bufio.NewWriterSize(conn, 64<<10)
	var err error
	for a := range answers {
		n := 0
		for a != nil {
			n++
			if err == nil {
				_, err = bw.Write(a)
			}
			select {
			case a = <-answers:
			default:
				a = nil
			}
		}
		if err == nil {
			err = bw.Flush()
		}
		s.end(n)
		if err != nil {
			conn.Close()
		}
	}
}

// serveFrame parses one relayed request, serves it and returns the framed
// answer. A request that cannot be parsed gets a 400.
func serveFrame(ctx context.Context, h http.Handler, remote string, id uint64, payload []byte) []byte {
	rec := &recorder{header: http.Header{}}
	br := readers.Get().(*bufio.Reader)
	br.Reset(bytes.NewReader(payload))
	req, err := http.ReadRequest(br)
	if err != nil {
		readers.Put(br)
		rec.header.Set("Content-Type", "text/plain; charset=utf-8")
		rec.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(&rec.body, "relay: malformed request: %v\n", err)
		return rec.frame(id)
	}
	req.RemoteAddr = remote
	h.ServeHTTP(rec, req.WithContext(ctx))
	readers.Put(br)
	return rec.frame(id)
}

// recorder collects a handler's answer in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
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

// frame encodes the answer as an HTTP/1.1 response behind a frame header.
func (r *recorder) frame(id uint64) []byte {
	r.WriteHeader(http.StatusOK)
	if r.body.Len() > MaxFrame-64<<10 {
		size := r.body.Len()
		r.header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
		r.status = http.StatusBadGateway
		r.body.Reset()
		fmt.Fprintf(&r.body, "relay: the answer (%d bytes) is too large to relay; ask the leader directly\n", size)
	}
	var b bytes.Buffer
	b.Grow(headerLen + 256 + r.body.Len())
	b.Write(make([]byte, headerLen))
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", r.status, http.StatusText(r.status))
	_ = r.header.WriteSubset(&b, hopByHop)
	b.WriteString("Content-Length: ")
	b.WriteString(strconv.Itoa(r.body.Len()))
	b.WriteString("\r\n\r\n")
	b.Write(r.body.Bytes())
	out := b.Bytes()
	appendFrame(out[:0], id, len(out)-headerLen)
	return out
}

// Shutdown refuses new relayed requests, waits for those being served
// (or ctx), then closes every relay connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	done := make(chan struct{})
	if s.inflight == 0 {
		close(done)
	} else {
		s.drained = done
	}
	s.mu.Unlock()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	for conn := range s.conns {
		conn.Close()
	}
	s.mu.Unlock()
	return err
}
