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
	c := newConnClient()
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

func TestConnClientRedialsAfterTheServerCloses(t *testing.T) {
	var seen peers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.RemoteAddr)
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := newConnClient()
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
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := newConnClient()
	defer c.close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var buf bytes.Buffer
		_, _, err := c.send(ctx, http.MethodGet, srv.URL, nil, &buf)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("send returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("send still waits for the answer after its context ended")
	}
	if c.conn != nil {
		t.Fatal("the interrupted connection is still kept")
	}
}
