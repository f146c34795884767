package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server starts an HTTP server on loopback that hands relay upgrades to
// rs and everything else to plain; it counts the connections it accepts.
func server(t *testing.T, rs *Server, plain http.Handler) (addr string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int64{}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rs != nil && IsUpgrade(r) {
				rs.ServeHTTP(w, r)
				return
			}
			plain.ServeHTTP(w, r)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		if rs != nil {
			_ = rs.Shutdown(context.Background())
		}
		_ = srv.Close()
	})
	return ln.Addr().String(), conns
}

func request(t *testing.T, method, uri string, header http.Header) *http.Request {
	t.Helper()
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	if header == nil {
		header = http.Header{}
	}
	return &http.Request{Method: method, URL: u, Host: "catalog.example", Header: header}
}

// echoHandler answers with what it received, so each answer shows which
// request it belongs to.
var echoHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Seen", r.Header.Get("X-Request"))
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "%s %s host=%s body=%s", r.Method, r.URL.RequestURI(), r.Host, body)
})

// TestConcurrentRequestsShareOneConnection relays many requests at once:
// each gets its own answer (status, headers, body), and all of them
// travel over a single connection.
func TestConcurrentRequestsShareOneConnection(t *testing.T) {
	addr, conns := server(t, &Server{Handler: echoHandler}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()

	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := http.Header{"X-Request": {fmt.Sprint(i)}}
			resp, sent, err := c.Do(context.Background(), addr, request(t, http.MethodPost, fmt.Sprintf("/t/%d?q=a%%20b", i), h), []byte(fmt.Sprintf("payload-%d", i)))
			if err != nil {
				errs <- fmt.Errorf("request %d: %v (sent %v)", i, err, sent)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			want := fmt.Sprintf("POST /t/%d?q=a%%20b host=catalog.example body=payload-%d", i, i)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Seen") != fmt.Sprint(i) || string(body) != want {
				errs <- fmt.Errorf("request %d: got %d %q %q, want 201 %q", i, resp.StatusCode, resp.Header.Get("X-Seen"), body, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := conns.Load(); got != 1 {
		t.Fatalf("%d requests used %d connections, want 1", n, got)
	}
}

// TestDialConnectsInsteadOfTCP: a client with Dial reaches the server
// only through it, under the address the caller named, and the dial has
// a deadline.
func TestDialConnectsInsteadOfTCP(t *testing.T) {
	addr, conns := server(t, &Server{Handler: echoHandler}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()
	var dials atomic.Int64
	c.Dial = func(ctx context.Context, named string) (net.Conn, error) {
		if _, ok := ctx.Deadline(); !ok || named != "peer.invalid:1" {
			return nil, fmt.Errorf("dial of %q (deadline %v)", named, ok)
		}
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	for i := range 3 {
		resp, _, err := c.Do(context.Background(), "peer.invalid:1", request(t, http.MethodGet, fmt.Sprintf("/d/%d", i), nil), nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if want := fmt.Sprintf("GET /d/%d host=catalog.example body=", i); string(body) != want {
			t.Fatalf("request %d answered %q, want %q", i, body, want)
		}
	}
	if dials.Load() != 1 || conns.Load() != 1 {
		t.Fatalf("%d dials, %d connections accepted; want 1 and 1", dials.Load(), conns.Load())
	}
}

// TestServerWithoutRelayIsUnsupported: a server that does not upgrade
// yields ErrUnsupported with nothing sent, so the caller can fall back.
func TestServerWithoutRelayIsUnsupported(t *testing.T) {
	addr, _ := server(t, nil, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()
	_, sent, err := c.Do(context.Background(), addr, request(t, http.MethodGet, "/x", nil), nil)
	if !errors.Is(err, ErrUnsupported) || sent {
		t.Fatalf("got %v (sent %v), want ErrUnsupported, not sent", err, sent)
	}
}

// TestUnreachableServerIsNotSent: when no connection can be made, the
// request surely never arrived.
func TestUnreachableServerIsNotSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := NewClient(time.Second)
	defer c.Close()
	if _, sent, err := c.Do(context.Background(), addr, request(t, http.MethodPost, "/x", nil), []byte("{}")); err == nil || sent {
		t.Fatalf("got %v (sent %v), want an error, not sent", err, sent)
	}
}

// TestLostConnectionFailsRequestsInFlightAsSent: when the connection
// breaks while the server is serving a request, the outcome is unknown,
// and the next request opens a new connection.
func TestLostConnectionFailsRequestsInFlightAsSent(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	rs := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) {
			close(started)
			<-release
		}
		w.WriteHeader(http.StatusOK)
	})}
	addr, conns := server(t, rs, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()

	done := make(chan error, 1)
	go func() {
		_, sent, err := c.Do(context.Background(), addr, request(t, http.MethodPost, "/commit", nil), []byte("{}"))
		if err == nil || !sent {
			done <- fmt.Errorf("got %v (sent %v), want an error with the request sent", err, sent)
			return
		}
		done <- nil
	}()
	<-started
	rs.mu.Lock()
	for sc := range rs.conns {
		sc.conn.Close()
	}
	rs.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(release)

	resp, _, err := c.Do(context.Background(), addr, request(t, http.MethodGet, "/load", nil), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("request after reconnecting: %v %v", resp, err)
	}
	if got := conns.Load(); got != 2 {
		t.Fatalf("server saw %d connections, want 2 (the lost one and its replacement)", got)
	}
}

// TestShutdownAnswersServedRequestsAndReleasesTheRest: a request being
// served when Shutdown begins gets its answer; one written after is not
// served and fails as not sent (safe to send elsewhere); then the
// connection closes and new ones are refused.
func TestShutdownAnswersServedRequestsAndReleasesTheRest(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var lateServed atomic.Bool
	rs := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			close(started)
			<-release
		case "/late":
			lateServed.Store(true)
		}
		io.WriteString(w, "served "+r.URL.Path)
	})}
	addr, _ := server(t, rs, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()

	slow := make(chan string, 1)
	go func() {
		resp, _, err := c.Do(context.Background(), addr, request(t, http.MethodPost, "/slow", nil), nil)
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		slow <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- rs.Shutdown(context.Background()) }()
	waitFor(t, "shutdown to begin draining", func() bool {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		for sc := range rs.conns {
			sc.mu.Lock()
			draining := sc.draining
			sc.mu.Unlock()
			if !draining {
				return false
			}
		}
		return true
	})
	late := make(chan error, 1)
	go func() {
		_, sent, err := c.Do(context.Background(), addr, request(t, http.MethodPost, "/late", nil), nil)
		if err == nil || sent {
			late <- fmt.Errorf("request written after shutdown began: err %v, sent %v; want an error, not sent", err, sent)
			return
		}
		late <- nil
	}()
	close(release)
	if got := <-slow; got != "200 served /slow" {
		t.Fatalf("request served during shutdown got %q", got)
	}
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	if lateServed.Load() {
		t.Fatal("a request written after shutdown began was served")
	}
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, sent, err := c.Do(context.Background(), addr, request(t, http.MethodGet, "/after", nil), nil); err == nil || sent {
		t.Fatalf("request after shutdown: err %v, sent %v; want an error, not sent", err, sent)
	}
}

// TestLargeBodiesBothWays relays a request and an answer far larger than
// any read buffer, byte for byte.
func TestLargeBodiesBothWays(t *testing.T) {
	addr, _ := server(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Write(bytes.Repeat(body, 3))
	})}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()
	for _, size := range []int{0, 1, 4095, 4096, 5003, 300 << 10, 2 << 20} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(i*7 + i/251)
		}
		resp, _, err := c.Do(context.Background(), addr, request(t, http.MethodPost, "/big", nil), body)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		got, _ := io.ReadAll(resp.Body)
		if !bytes.Equal(got, bytes.Repeat(body, 3)) || resp.ContentLength != int64(3*size) {
			t.Fatalf("%d byte request: answer of %d bytes (content length %d), want %d", size, len(got), resp.ContentLength, 3*size)
		}
	}
}

// TestPanickingHandlerAnswers500: a handler that panics costs its request
// a 500, not the server or the connection.
func TestPanickingHandlerAnswers500(t *testing.T) {
	addr, conns := server(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		io.WriteString(w, "ok")
	})}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()
	resp, _, err := c.Do(context.Background(), addr, request(t, http.MethodGet, "/panic", nil), nil)
	if err != nil || resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("panicking handler: %v %v, want a 500", resp, err)
	}
	resp, _, err = c.Do(context.Background(), addr, request(t, http.MethodGet, "/fine", nil), nil)
	if err != nil || resp.StatusCode != http.StatusOK || conns.Load() != 1 {
		t.Fatalf("after the panic: %v %v on %d connections, want 200 on the same one", resp, err, conns.Load())
	}
}

// TestOversizedRequestIsRefusedAlone: a request above the server's frame
// limit reaches the handler with its headers only (its Content-Length says
// how large it was, so the handler can answer 413); the requests sharing
// the connection are unaffected.
func TestOversizedRequestIsRefusedAlone(t *testing.T) {
	var bodies atomic.Int64
	addr, conns := server(t, &Server{MaxFrame: 64 << 10, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 64<<10 {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		b, _ := io.ReadAll(r.Body)
		bodies.Add(int64(len(b)))
		io.WriteString(w, "ok")
	})}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()
	resp, sent, err := c.Do(context.Background(), addr, request(t, http.MethodPost, "/big", nil), make([]byte, 200<<10))
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized request: %v %v (sent %v), want its own 413", resp, err, sent)
	}
	resp, _, err = c.Do(context.Background(), addr, request(t, http.MethodPost, "/small", nil), []byte("x"))
	if err != nil || resp.StatusCode != http.StatusOK || conns.Load() != 1 || bodies.Load() != 1 {
		t.Fatalf("next request: %v %v on %d connections (%d body bytes served), want 200 on the same one", resp, err, conns.Load(), bodies.Load())
	}
}

// TestMovingToAnotherServerRetiresTheOldConnection: once requests go to a
// new address (a new leader), the idle connection to the old one closes.
func TestMovingToAnotherServerRetiresTheOldConnection(t *testing.T) {
	rs := &Server{Handler: echoHandler}
	old, _ := server(t, rs, http.NotFoundHandler())
	next, _ := server(t, &Server{Handler: echoHandler}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()
	for _, addr := range []string{old, next} {
		if _, _, err := c.Do(context.Background(), addr, request(t, http.MethodGet, "/", nil), nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the old connection to close", func() bool { rs.mu.Lock(); defer rs.mu.Unlock(); return len(rs.conns) == 0 })
}

// TestConnectionRetiredWhileDiallingIsDropped: a connection still being
// dialled when requests move to another address is closed once it is up,
// and the client keeps no trace of it.
func TestConnectionRetiredWhileDiallingIsDropped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted, answer, closed := make(chan net.Conn, 1), make(chan struct{}), make(chan struct{})
	go func() { // a slow server: it upgrades only when told to
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		accepted <- conn
		<-answer
		fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", protocol)
		conn.Read(make([]byte, 1)) // returns once the client closes
		close(closed)
	}()
	next, _ := server(t, &Server{Handler: echoHandler}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()

	slow := make(chan error, 1)
	go func() {
		_, sent, err := c.Do(context.Background(), ln.Addr().String(), request(t, http.MethodGet, "/", nil), nil)
		if err == nil || sent {
			slow <- fmt.Errorf("request on the retired connection: err %v, sent %v; want an error, not sent", err, sent)
			return
		}
		slow <- nil
	}()
	(<-accepted).SetDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := c.Do(context.Background(), next, request(t, http.MethodGet, "/", nil), nil); err != nil {
		t.Fatal(err)
	}
	close(answer)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	<-closed
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.all) != 1 || len(c.conns) != 1 {
		t.Fatalf("client keeps %d connections (%d by address), want only the one to %s", len(c.all), len(c.conns), next)
	}
}

// TestRetiredConnectionGivesUpOnASilentServer: requests waiting on a
// connection to a former leader that never answers fail, as sent, once
// the connection has been retired for RetiredWait.
func TestRetiredConnectionGivesUpOnASilentServer(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	silent, _ := server(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	})}, http.NotFoundHandler())
	next, _ := server(t, &Server{Handler: echoHandler}, http.NotFoundHandler())
	c := NewClient(time.Second)
	c.RetiredWait = 50 * time.Millisecond
	defer c.Close()

	waiting := make(chan error, 1)
	go func() {
		_, sent, err := c.Do(context.Background(), silent, request(t, http.MethodPost, "/commit", nil), []byte("{}"))
		if err == nil || !sent {
			waiting <- fmt.Errorf("request to the silent server: err %v, sent %v; want an error, sent", err, sent)
			return
		}
		waiting <- nil
	}()
	<-started
	if _, _, err := c.Do(context.Background(), next, request(t, http.MethodGet, "/", nil), nil); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds (a condition, not a timed guess).
func waitFor(t *testing.T, what string, cond func() bool) {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out waiting for %s", what)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOversizedFrameIsRefusedBeforeReading: a frame header announcing
// more than MaxFrame fails without the payload being read or allocated.
func TestOversizedFrameIsRefusedBeforeReading(t *testing.T) {
	header := appendFrame(nil, 7, MaxFrame+1)
	_, _, err := readFrame(bufio.NewReader(bytes.NewReader(header)), MaxFrame)
	if err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("oversized frame: %v", err)
	}
}

// rawRelay opens a relay connection by hand and returns it after the
// upgrade, so a test can send broken frames.
func rawRelay(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", Path, protocol)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return conn, br
}

// A peer that stops in the middle of a frame, or announces a frame far
// larger than it sends, loses its connection once the frame timeout
// passes, instead of holding it (and a server goroutine) for ever.
func TestStalledFrameLosesTheConnection(t *testing.T) {
	for name, announce := range map[string]int{"short frame": 100, "4 GiB frame": 1<<32 - 1} {
		t.Run(name, func(t *testing.T) {
			rs := &Server{Handler: http.NotFoundHandler(), MaxFrame: 1 << 20, FrameTimeout: 200 * time.Millisecond}
			addr, _ := server(t, rs, http.NotFoundHandler())
			conn, br := rawRelay(t, addr)
			frame := appendFrame(nil, 1, announce)
			if _, err := conn.Write(append(frame, "GET "...)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("read after a stalled frame = %v, want the server to close the connection", err)
			}
			waitFor(t, "connection dropped from the server's count", func() bool { return rs.Stats().Connections == 0 })
		})
	}
}

// An idle relay connection is not closed by the frame timeout.
func TestIdleConnectionOutlivesTheFrameTimeout(t *testing.T) {
	rs := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }),
		FrameTimeout: 250 * time.Millisecond}
	addr, _ := server(t, rs, http.NotFoundHandler())
	c := NewClient(time.Second)
	t.Cleanup(func() { c.Close() })
	for i := range 3 {
		resp, _, err := c.Do(context.Background(), addr, request(t, http.MethodGet, "http://"+addr+"/x", nil), nil)
		if err != nil || resp.StatusCode != 204 {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
		time.Sleep(600 * time.Millisecond) // idle for over two frame timeouts: what is tested
	}
	if rs.Stats().Connections != 1 {
		t.Fatalf("connections = %d, want the one connection kept", rs.Stats().Connections)
	}
}

// The answer to a relayed HEAD request keeps the Content-Length its
// handler declared (the size a GET would send), with no body, and the
// same connection then serves a GET.
func TestHeadKeepsItsDeclaredLength(t *testing.T) {
	file := strings.Repeat("x", 262)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "", time.Unix(1700000000, 0), strings.NewReader(file))
	})
	addr, _ := server(t, &Server{Handler: h}, http.NotFoundHandler())
	c := NewClient(time.Second)
	defer c.Close()
	for _, method := range []string{http.MethodHead, http.MethodGet, http.MethodHead} {
		resp, _, err := c.Do(context.Background(), addr, request(t, method, "/f", nil), nil)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		body, _ := io.ReadAll(resp.Body)
		want := file
		if method == http.MethodHead {
			want = ""
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Length") != "262" || string(body) != want {
			t.Fatalf("%s: %d, Content-Length %q, %d bytes of body", method, resp.StatusCode, resp.Header.Get("Content-Length"), len(body))
		}
	}
}
