package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// peers records the client address of every request a test server saw.
type peers struct {
	mu    sync.Mutex
	addrs []string
}

func (p *peers) add(a string) { p.mu.Lock(); p.addrs = append(p.addrs, a); p.mu.Unlock() }
func (p *peers) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.addrs...)
}

func TestConnClientKeepsOneConnectionAndReadsWholeAnswers(t *testing.T) {
	var seen peers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.RemoteAddr)
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, r.Method+" "+r.Header.Get("Content-Type")+" "+string(body))
	}))
	defer srv.Close()
	c := newConnClient("", nil)
	defer c.close()
	var buf bytes.Buffer
	for i, body := range []string{`{"a":1}`, `{"b":2}`} {
		code, answer, err := c.send(context.Background(), http.MethodPost, srv.URL+"/t", strings.NewReader(body), &buf)
		if err != nil || code != http.StatusConflict || string(answer) != "POST application/json "+body {
			t.Fatalf("exchange %d: %d %q %v", i, code, answer, err)
		}
	}
	if a := seen.list(); len(a) != 2 || a[0] != a[1] {
		t.Fatalf("requests came from %v, want one kept-alive connection", a)
	}
}

// Over https the client puts TLS on its connection, trusting what its
// configuration trusts, and keeps that connection too; http URLs stay
// plain whatever the configuration.
func TestConnClientSpeaksTLSToHTTPSURLs(t *testing.T) {
	var seen peers
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.RemoteAddr)
		io.WriteString(w, r.Proto)
	})
	srv := httptest.NewTLSServer(handler)
	defer srv.Close()
	plain := httptest.NewServer(handler)
	defer plain.Close()
	c := newConnClient("", srv.Client().Transport.(*http.Transport).TLSClientConfig)
	defer c.close()
	var buf bytes.Buffer
	for i, u := range []string{srv.URL, srv.URL, plain.URL} {
		code, answer, err := c.send(context.Background(), http.MethodGet, u+"/t", nil, &buf)
		if err != nil || code != http.StatusOK || string(answer) != "HTTP/1.1" {
			t.Fatalf("exchange %d with %s: %d %q %v", i, u, code, answer, err)
		}
	}
	if a := seen.list(); len(a) != 3 || a[0] != a[1] || a[1] == a[2] {
		t.Fatalf("requests came from %v, want one kept-alive TLS connection, then a plain one", a)
	}
	if _, _, err := newConnClient("", nil).send(context.Background(), http.MethodGet, srv.URL+"/t", nil, &buf); err == nil {
		t.Fatal("a server certificate the client does not trust was accepted")
	}
}

func TestConnClientRedialsAfterTheServerCloses(t *testing.T) {
	var seen peers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.RemoteAddr)
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := newConnClient("", nil)
	defer c.close()
	var buf bytes.Buffer
	for i := 0; i < 2; i++ {
		if code, _, err := c.send(context.Background(), http.MethodGet, srv.URL, nil, &buf); err != nil || code != http.StatusOK {
			t.Fatalf("exchange %d: %d %v", i, code, err)
		}
	}
	if a := seen.list(); len(a) != 2 || a[0] == a[1] {
		t.Fatalf("requests came from %v, want a new connection after Connection: close", a)
	}
}

func TestConnClientStopsWaitingWhenTheContextEnds(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			once.Do(func() { close(arrived) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	defer close(release)
	c := newConnClient("", nil)
	defer c.close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var buf bytes.Buffer
		_, _, err := c.send(ctx, http.MethodGet, srv.URL+"/slow", nil, &buf)
		done <- err
	}()
	<-arrived // the request is at the server, its answer awaited
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("send returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("send still waits for the answer after its context ended")
	}
	var buf bytes.Buffer
	if code, answer, err := c.send(context.Background(), http.MethodGet, srv.URL+"/fast", nil, &buf); err != nil || code != http.StatusOK || string(answer) != "ok" {
		t.Fatalf("the next request after a cancelled one: %d %q %v", code, answer, err)
	}
}

// dropAfterAnswer answers, then closes the connection without saying so,
// as a proxy dropping an idle kept-alive connection does.
func dropAfterAnswer(seen *peers) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.RemoteAddr)
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		io.WriteString(bw, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		bw.Flush()
		conn.Close()
	}
}

func TestConnClientSendsAReadAgainOnANewConnectionButNeverACommit(t *testing.T) {
	var seen peers
	srv := httptest.NewServer(dropAfterAnswer(&seen))
	defer srv.Close()
	c := newConnClient("", nil)
	defer c.close()
	var buf bytes.Buffer
	for i := 0; i < 2; i++ {
		if code, _, err := c.send(context.Background(), http.MethodGet, srv.URL, nil, &buf); err != nil || code != http.StatusOK {
			t.Fatalf("read %d on a dropped connection: %d %v", i, code, err)
		}
	}
	if _, _, err := c.send(context.Background(), http.MethodPost, srv.URL, strings.NewReader("{}"), &buf); err == nil {
		t.Fatal("a commit written into a dropped connection was sent again")
	}
	if n := len(seen.list()); n != 2 {
		t.Fatalf("the server saw %d requests, want the two reads only", n)
	}
}

func TestConnClientReplacesAConnectionIdleTooLong(t *testing.T) {
	var seen peers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.add(r.RemoteAddr) }))
	defer srv.Close()
	c := newConnClient("", nil)
	defer c.close()
	c.idleLimit = 0 // every connection is too old by its next request
	var buf bytes.Buffer
	for i := 0; i < 2; i++ {
		if code, _, err := c.send(context.Background(), http.MethodGet, srv.URL, nil, &buf); err != nil || code != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, code, err)
		}
	}
	if a := seen.list(); len(a) != 2 || a[0] == a[1] {
		t.Fatalf("requests came from %v, want a new connection for the second", a)
	}
}
