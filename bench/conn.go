package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// connClient is one writer's HTTP client: a keep-alive connection of its
// own on which the writer's goroutine writes each request and reads its
// answer itself, as the PostgreSQL writers' pgx connections do. net/http's
// client hands every exchange to a reader and a writer goroutine of its
// own per connection, and those hand-offs would be charged to the catalog
// (docs/performance.md measures them).
type connClient struct {
	timeout   time.Duration // of one exchange
	idleLimit time.Duration // see connIdleLimit
	token     bearer        // sent with every request
	tls       *tls.Config   // for https:// URLs (nil: the system's roots)
	conn      net.Conn
	host      string
	br        *bufio.Reader
	bw        *bufio.Writer
	lastUsed  time.Time
	// perNode keeps a connection to each node the writer's requests go
	// to (in nodes) rather than one that follows them.
	perNode bool
	nodes   map[string]*connClient
	// pooled, when set, takes every exchange instead: the net/http
	// client the writers share.
	pooled *http.Client
}

// connIdleLimit is how long a connection may sit unused before it is
// replaced: a server may close a kept-alive connection it finds idle,
// and a request written into such a connection is lost. Writers are idle
// between rounds, while the other systems run.
const connIdleLimit = 2 * time.Second

func newConnClient(token bearer, tlsConfig *tls.Config) *connClient {
	return &connClient{timeout: 30 * time.Second, idleLimit: connIdleLimit, token: token, tls: tlsConfig}
}

// send is raftcatSystem.send on this writer's connection.
func (c *connClient) send(ctx context.Context, method, url string, body io.Reader, buf *bytes.Buffer) (int, []byte, error) {
	switch {
	case c.pooled != nil:
		return c.sendPooled(ctx, method, url, body, buf)
	case c.perNode:
		return c.nodeConn(url).send(ctx, method, url, body, buf)
	}
	buf.Reset()
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.token.authorize(req.Header)
	reused, err := c.connect(ctx, req.URL)
	if err != nil {
		return 0, nil, err
	}
	code, err := c.exchange(ctx, req, buf)
	if err != nil && reused && method == http.MethodGet && ctx.Err() == nil {
		// A kept-alive connection the server or a proxy dropped meanwhile:
		// a read is safe to send again on a new one (a commit never is).
		c.close()
		buf.Reset()
		if _, err = c.connect(ctx, req.URL); err == nil {
			code, err = c.exchange(ctx, req, buf)
		}
	}
	if err != nil || ctx.Err() != nil {
		c.close() // its state is unknown, or a cancellation may still set its deadline
	}
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return code, buf.Bytes(), err
}

// connect makes sure a fresh enough connection to u's host is open, with
// TLS for https; reused says it was open before.
func (c *connClient) connect(ctx context.Context, u *url.URL) (reused bool, err error) {
	host := u.Host
	if c.conn != nil && (c.host != host || time.Since(c.lastUsed) > c.idleLimit) {
		c.close()
	}
	if c.conn != nil {
		return true, nil
	}
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", host)
	if err != nil {
		return false, err
	}
	if u.Scheme == "https" {
		if conn, err = c.handshake(ctx, conn, host); err != nil {
			return false, err
		}
	}
	c.conn, c.host = conn, host
	c.br, c.bw = bufio.NewReader(conn), bufio.NewWriter(conn)
	return false, nil
}

// handshake puts TLS on a new connection to host, speaking HTTP/1.1 as
// the plain connections do; it is kept alive and reused, as they are.
func (c *connClient) handshake(ctx context.Context, conn net.Conn, host string) (net.Conn, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tls != nil {
		cfg = c.tls.Clone()
	}
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(host)
	}
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// exchange writes req and reads its whole answer into buf, within the
// client's timeout and until ctx ends.
func (c *connClient) exchange(ctx context.Context, req *http.Request, buf *bytes.Buffer) (int, error) {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return 0, err
	}
	conn := c.conn
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := req.Write(c.bw); err != nil {
		return 0, err
	}
	if err := c.bw.Flush(); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return 0, err
	}
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	c.lastUsed = time.Now()
	if err == nil && resp.Close {
		c.close()
	}
	return resp.StatusCode, err
}

func (c *connClient) close() {
	if c == nil {
		return
	}
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	for _, n := range c.nodes {
		n.close()
	}
}
