package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client relays requests to servers, keeping one connection per address.
// When requests move to another address (a new leader) the connections to
// the others close once their last answer is in.
type Client struct {
	dialer      net.Dialer
	mu          sync.Mutex
	conns       map[string]*clientConn
	unsupported map[string]time.Time // addresses that refused the upgrade, and when
	closed      bool
}

// NewClient returns a client; dialTimeout bounds connecting and the upgrade.
func NewClient(dialTimeout time.Duration) *Client {
	return &Client{
		dialer:      net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		conns:       map[string]*clientConn{},
		unsupported: map[string]time.Time{},
	}
}

// retryUnsupported is how long an address that refused the upgrade is
// left alone before the client asks again (it may have been upgraded).
const retryUnsupported = time.Minute

// hopByHop headers belong to one connection and are not relayed; the
// relay writes its own Host and Content-Length.
var hopByHop = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true, "Host": true}

// Do relays one request, whose body is body, to the server at addr
// (host:port) and returns its answer with the body read into memory.
// sent is false when the request surely never reached the server (so it
// may be retried even if it is not idempotent); it is true when the
// connection failed or ctx ended after the request may have been written.
// ErrUnsupported (sent false) means addr does not accept relay connections.
func (c *Client) Do(ctx context.Context, addr string, r *http.Request, body []byte) (resp *http.Response, sent bool, err error) {
	frame, err := encodeRequest(r, body)
	if err != nil {
		return nil, false, err
	}
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	cl := &call{frame: frame, done: make(chan struct{})}
	if err := cc.register(cl); err != nil {
		return nil, false, err
	}
	select {
	case cc.queue <- cl:
	case <-cc.broken:
		cc.forget(cl)
		return nil, cl.written.Load(), cc.failure()
	case <-ctx.Done():
		cc.forget(cl)
		return nil, false, ctx.Err()
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		cc.forget(cl)
		return nil, true, ctx.Err()
	}
	if cl.err != nil {
		return nil, cl.written.Load(), cl.err
	}
	br := readers.Get().(*bufio.Reader)
	defer readers.Put(br)
	br.Reset(bytes.NewReader(cl.answer))
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		return nil, true, fmt.Errorf("relay: malformed answer: %w", err)
	}
	// The body is a slice of the frame: hand it over as it is, so the
	// caller reads it without the pooled reader.
	head := len(cl.answer) - br.Buffered()
	resp.Body.Close()
	resp.Body = nopCloser{bytes.NewReader(cl.answer[head:])}
	return resp, true, nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// encodeRequest writes r as an HTTP/1.1 message behind a frame header
// whose id is filled in when the request is queued.
func encodeRequest(r *http.Request, body []byte) ([]byte, error) {
	if len(body) > MaxFrame-64<<10 {
		return nil, fmt.Errorf("relay: request body of %d bytes is too large to relay", len(body))
	}
	var b bytes.Buffer
	b.Grow(headerLen + 512 + len(body))
	b.Write(make([]byte, headerLen))
	host := r.Host
	if host == "" {
		host = "relay"
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.URL.RequestURI(), host)
	if err := r.Header.WriteSubset(&b, hopByHop); err != nil {
		return nil, err
	}
	b.WriteString("Content-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes(), nil
}

// conn returns the open connection to addr, dialling it if needed, and
// retires connections to other addresses.
func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	c.mu.Lock()
	var retired []*clientConn
	for other, cc := range c.conns {
		if other != addr {
			delete(c.conns, other)
			retired = append(retired, cc)
		}
	}
	cc, err := c.connLocked(ctx, addr)
	c.mu.Unlock()
	for _, old := range retired {
		old.retire() // may close it, which takes c.mu
	}
	return cc, err
}

func (c *Client) connLocked(ctx context.Context, addr string) (*clientConn, error) {
	if c.closed {
		return nil, errors.New("relay: client closed")
	}
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	if at, ok := c.unsupported[addr]; ok && time.Since(at) < retryUnsupported {
		return nil, ErrUnsupported
	}
	cc, err := c.dial(ctx, addr)
	if errors.Is(err, ErrUnsupported) {
		c.unsupported[addr] = time.Now()
	}
	if err != nil {
		return nil, err
	}
	delete(c.unsupported, addr)
	c.conns[addr] = cc
	return cc, nil
}

// dial connects and upgrades; nothing has been relayed when it fails.
func (c *Client) dial(ctx context.Context, addr string) (*clientConn, error) {
	conn, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if c.dialer.Timeout > 0 {
		_ = conn.SetDeadline(time.Now().Add(c.dialer.Timeout))
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", Path, addr, protocol)
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("relay: upgrade with %s: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), protocol) {
		conn.Close()
		return nil, fmt.Errorf("%w (%s answered %s)", ErrUnsupported, addr, resp.Status)
	}
	_ = conn.SetDeadline(time.Time{})
	cc := &clientConn{client: c, addr: addr, conn: conn, queue: make(chan *call, 1024),
		pending: map[uint64]*call{}, broken: make(chan struct{})}
	go cc.writeLoop()
	go cc.readLoop(br)
	return cc, nil
}

// Close closes every connection; requests in flight fail as sent.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = map[string]*clientConn{}
	c.mu.Unlock()
	for _, cc := range conns {
		cc.fail(errors.New("relay: client closed"))
	}
}

// call is one request in flight.
type call struct {
	id      uint64
	frame   []byte
	written atomic.Bool // the writer has started writing the frame
	done    chan struct{}
	answer  []byte
	err     error
}

type clientConn struct {
	client *Client
	addr   string
	conn   net.Conn
	queue  chan *call

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*call
	retired bool  // requests go elsewhere now: close after the last answer
	err     error // why the connection broke
	broken  chan struct{}
}

func (cc *clientConn) register(cl *call) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		return cc.err
	}
	cc.nextID++
	cl.id = cc.nextID
	appendFrame(cl.frame[:0], cl.id, len(cl.frame)-headerLen)
	cc.pending[cl.id] = cl
	return nil
}

// forget drops a call whose caller stopped waiting; a late answer is
// discarded.
func (cc *clientConn) forget(cl *call) {
	cc.mu.Lock()
	delete(cc.pending, cl.id)
	idle := cc.retired && len(cc.pending) == 0
	cc.mu.Unlock()
	if idle {
		cc.fail(errors.New("relay: connection retired"))
	}
}

func (cc *clientConn) failure() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err
}

func (cc *clientConn) retire() {
	cc.mu.Lock()
	cc.retired = true
	idle := len(cc.pending) == 0
	cc.mu.Unlock()
	if idle {
		cc.fail(errors.New("relay: connection retired"))
	}
}

// fail breaks the connection once and fails every call still waiting.
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	cc.err = fmt.Errorf("relay connection to %s: %w", cc.addr, err)
	pending := cc.pending
	cc.pending = map[uint64]*call{}
	close(cc.broken)
	cc.mu.Unlock()
	cc.conn.Close()
	cc.client.mu.Lock()
	if cc.client.conns[cc.addr] == cc {
		delete(cc.client.conns, cc.addr)
	}
	cc.client.mu.Unlock()
	for _, cl := range pending {
		cl.err = cc.err
		close(cl.done)
	}
}

// writeLoop writes queued frames, flushing only when the queue is empty so
// that frames queued meanwhile share one write.
func (cc *clientConn) writeLoop() {
	bw := bufio.NewWriterSize(cc.conn, 64<<10)
	for {
		var cl *call
		select {
		case cl = <-cc.queue:
		case <-cc.broken:
			return
		}
		for cl != nil {
			cl.written.Store(true)
			if _, err := bw.Write(cl.frame); err != nil {
				cc.fail(err)
				return
			}
			cl.frame = nil
			select {
			case cl = <-cc.queue:
			default:
				cl = nil
			}
		}
		if err := bw.Flush(); err != nil {
			cc.fail(err)
			return
		}
	}
}

// readLoop hands each answer to the call waiting for it.
func (cc *clientConn) readLoop(br *bufio.Reader) {
	for {
		id, payload, err := readFrame(br)
		if err != nil {
			cc.fail(err)
			return
		}
		cc.mu.Lock()
		cl, ok := cc.pending[id]
		delete(cc.pending, id)
		idle := cc.retired && len(cc.pending) == 0
		cc.mu.Unlock()
		if ok {
			cl.answer = payload
			close(cl.done)
		}
		if idle {
			cc.fail(errors.New("relay: connection retired"))
			return
		}
	}
}
