package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client relays requests to servers, keeping one connection per address.
// When requests move to another address (a new leader) the connections to
// the others close once their last answer is in.
type Client struct {
	// RetiredWait is how long requests on a retired connection (to a
	// former leader) may still wait for their answers; then they fail
	// with an unknown outcome rather than hang on a leader that went
	// silent (0: 10 s).
	RetiredWait time.Duration
	// UpgradeHeader, if set, gives headers the upgrade request carries
	// (a peer's proof that it belongs to the cluster).
	UpgradeHeader func() http.Header
	// Dial, if set, connects to addr instead of a plain TCP dial (a
	// network between peers that authenticates them); ctx bounds the
	// dial, the upgrade has its own deadline.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	dialer      net.Dialer
	mu          sync.Mutex
	conns       map[string]*clientConn   // the connection (maybe still dialling) per address
	all         map[*clientConn]struct{} // every open connection, retired ones too
	unsupported map[string]time.Time     // addresses that refused the upgrade, and when
	closed      bool
}

// NewClient returns a client; dialTimeout (2 s if 0) bounds connecting
// and the upgrade.
func NewClient(dialTimeout time.Duration) *Client {
	if dialTimeout <= 0 {
		dialTimeout = 2 * time.Second
	}
	return &Client{
		dialer:      net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		conns:       map[string]*clientConn{},
		all:         map[*clientConn]struct{}{},
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
// sent is false when the request surely was not served (so it may be sent
// again elsewhere even if it is not idempotent); it is true when the
// connection failed or ctx ended after the request may have been served.
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
	select {
	case cc.queue <- cl:
	case <-cc.broken:
		return nil, false, cc.failure()
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	select {
	case <-cl.done:
	case <-cc.broken:
		if !cc.abandon(cl) { // the writer took it: fail answers it
			<-cl.done
			break
		}
		return nil, false, cc.failure()
	case <-ctx.Done():
		if cc.abandon(cl) {
			return nil, false, ctx.Err()
		}
		cc.forget(cl)
		return nil, true, ctx.Err()
	}
	if cl.err != nil {
		return nil, cl.sent, cl.err
	}
	return decodeAnswer(cl.answer, r.Method)
}

// decodeAnswer parses a framed HTTP answer to a request of the given
// method; its body stays in the frame. The answer to a HEAD request has
// none, whatever Content-Length it declares.
func decodeAnswer(answer []byte, method string) (*http.Response, bool, error) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(bytes.NewReader(answer))
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	br.Reset(nil)
	readers.Put(br)
	if err != nil {
		return nil, true, fmt.Errorf("relay: malformed answer: %w", err)
	}
	if method == http.MethodHead {
		resp.Body = nopCloser{bytes.NewReader(nil)}
		return resp, true, nil
	}
	if resp.ContentLength < 0 || resp.ContentLength > int64(len(answer)) {
		return nil, true, fmt.Errorf("relay: malformed answer: content length %d in a %d byte frame", resp.ContentLength, len(answer))
	}
	resp.Body = nopCloser{bytes.NewReader(answer[int64(len(answer))-resp.ContentLength:])}
	return resp, true, nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// encodeRequest writes r as an HTTP/1.1 message behind a frame header
// whose id the writer fills in.
func encodeRequest(r *http.Request, body []byte) ([]byte, error) {
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

// conn returns the connection to addr once it is up, starting a dial if
// there is none, and retires connections to other addresses. The dial runs
// on its own, so waiting for it never holds the client's lock.
func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("relay: client closed")
	}
	var retired []*clientConn
	for other, cc := range c.conns {
		if other != addr {
			delete(c.conns, other)
			retired = append(retired, cc)
		}
	}
	cc, ok := c.conns[addr]
	if !ok {
		if at, refused := c.unsupported[addr]; refused && time.Since(at) < retryUnsupported {
			c.mu.Unlock()
			retireAll(retired)
			return nil, ErrUnsupported
		}
		cc = &clientConn{client: c, addr: addr, ready: make(chan struct{}), queue: make(chan *call, 1024),
			pending: map[uint64]*call{}, broken: make(chan struct{})}
		c.conns[addr] = cc
		go c.dial(cc)
	}
	c.mu.Unlock()
	retireAll(retired)
	select {
	case <-cc.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if cc.dialErr != nil {
		return nil, cc.dialErr
	}
	return cc, nil
}

func retireAll(ccs []*clientConn) {
	for _, cc := range ccs {
		cc.retire()
	}
}

// dial connects and upgrades; nothing has been relayed when it fails.
func (c *Client) dial(cc *clientConn) {
	conn, br, err := c.upgrade(cc.addr)
	c.mu.Lock()
	if err == nil && c.closed {
		err = errors.New("relay: client closed")
	}
	if err == nil {
		cc.mu.Lock()
		if cc.err != nil { // retired before it was up
			err = cc.err
		} else {
			cc.conn = conn
			c.all[cc] = struct{}{}
			delete(c.unsupported, cc.addr)
		}
		cc.mu.Unlock()
	}
	if err != nil {
		if c.conns[cc.addr] == cc {
			delete(c.conns, cc.addr)
		}
		if errors.Is(err, ErrUnsupported) {
			c.unsupported[cc.addr] = time.Now()
		}
	}
	c.mu.Unlock()
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		cc.dialErr = err
		close(cc.ready)
		cc.fail(err, nil)
		return
	}
	close(cc.ready)
	go cc.writeLoop()
	go cc.readLoop(br)
}

func (c *Client) upgrade(addr string) (net.Conn, *bufio.Reader, error) {
	conn, err := c.connect(addr)
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(c.dialer.Timeout))
	var extra strings.Builder
	if c.UpgradeHeader != nil {
		_ = c.UpgradeHeader().Write(&extra)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s\r\n", Path, addr, protocol, extra.String())
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("relay: upgrade with %s: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), protocol) {
		conn.Close()
		if resp.StatusCode >= 400 && resp.StatusCode < 500 { // it does not know the upgrade
			return nil, nil, fmt.Errorf("%w (%s answered %s)", ErrUnsupported, addr, resp.Status)
		}
		return nil, nil, fmt.Errorf("relay: upgrade with %s: %s", addr, resp.Status)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, br, nil
}

// connect dials addr, through Dial when it is set, within the dial
// timeout.
func (c *Client) connect(addr string) (net.Conn, error) {
	if c.Dial == nil {
		return c.dialer.Dial("tcp", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.dialer.Timeout)
	defer cancel()
	return c.Dial(ctx, addr)
}

// Close closes every connection; requests in flight fail as sent.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	all := slices.Collect(maps.Keys(c.all))
	c.mu.Unlock()
	for _, cc := range all {
		cc.fail(errors.New("relay: client closed"), nil)
	}
}

// call is one request in flight.
type call struct {
	id        uint64 // set by the writer, in the order frames go out
	frame     []byte
	taken     bool // the writer took it (guarded by clientConn.mu)
	abandoned bool // its caller left before the writer took it
	done      chan struct{}
	answer    []byte
	err       error
	sent      bool // with err: the request may have been served
}

type clientConn struct {
	client  *Client
	addr    string
	ready   chan struct{} // closed once dialled; dialErr says how it went
	dialErr error
	conn    net.Conn
	queue   chan *call

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*call
	retired bool  // requests go elsewhere now: close after the last answer
	err     error // why the connection broke
	broken  chan struct{}
}

// take registers a queued call under the next id, unless its caller left
// or the connection broke.
func (cc *clientConn) take(cl *call) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cl.abandoned || cc.err != nil {
		return false
	}
	cl.taken = true
	cc.nextID++
	cl.id = cc.nextID
	appendFrame(cl.frame[:0], cl.id, len(cl.frame)-headerLen)
	cc.pending[cl.id] = cl
	return true
}

// abandon withdraws a call the writer has not taken; false if it has.
func (cc *clientConn) abandon(cl *call) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cl.taken {
		return false
	}
	cl.abandoned = true
	return true
}

// forget drops a taken call whose caller stopped waiting; a late answer
// is discarded.
func (cc *clientConn) forget(cl *call) {
	cc.mu.Lock()
	delete(cc.pending, cl.id)
	b := cc.closeIfIdleLocked()
	cc.mu.Unlock()
	b.finish(cc, nil)
}

// closeIfIdleLocked breaks a retired connection once nothing is pending,
// in the same critical section that saw it idle, so the writer cannot
// take another call in between.
func (cc *clientConn) closeIfIdleLocked() breakage {
	if cc.retired && len(cc.pending) == 0 {
		return cc.breakLocked(errors.New("relay: connection retired"))
	}
	return breakage{}
}

func (cc *clientConn) failure() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err
}

func (cc *clientConn) retire() {
	cc.mu.Lock()
	cc.retired = true
	b := cc.closeIfIdleLocked()
	cc.mu.Unlock()
	if !b.broke {
		wait := cc.client.RetiredWait
		if wait <= 0 {
			wait = 10 * time.Second
		}
		time.AfterFunc(wait, func() { cc.fail(errors.New("the former leader did not answer in time"), nil) })
	}
	b.finish(cc, nil)
}

// fail breaks the connection once and fails every call still waiting.
// After a server's going-away frame (servedUpTo), calls it did not serve
// fail as not sent.
func (cc *clientConn) fail(err error, servedUpTo *uint64) {
	cc.mu.Lock()
	b := cc.breakLocked(err)
	cc.mu.Unlock()
	b.finish(cc, servedUpTo)
}

// breakage is what breaking a connection leaves to do outside its lock.
type breakage struct {
	broke   bool
	conn    net.Conn
	pending map[uint64]*call
}

// breakLocked marks the connection broken (the first time only): from
// then on the writer takes no call.
func (cc *clientConn) breakLocked(err error) breakage {
	if cc.err != nil {
		return breakage{}
	}
	cc.err = fmt.Errorf("relay connection to %s: %w", cc.addr, err)
	b := breakage{broke: true, conn: cc.conn, pending: cc.pending}
	cc.pending = map[uint64]*call{}
	close(cc.broken)
	return b
}

// finish forgets the connection, closes it and fails the calls that were
// waiting. It forgets it first: a caller that saw its call fail and sends
// again must get a new connection, not this one.
func (b breakage) finish(cc *clientConn, servedUpTo *uint64) {
	if !b.broke {
		return
	}
	cc.client.mu.Lock()
	if cc.client.conns[cc.addr] == cc {
		delete(cc.client.conns, cc.addr)
	}
	delete(cc.client.all, cc)
	cc.client.mu.Unlock()
	if b.conn != nil {
		b.conn.Close()
	}
	for _, cl := range b.pending {
		cl.err, cl.sent = cc.err, servedUpTo == nil || cl.id <= *servedUpTo
		close(cl.done)
	}
}

// writeLoop writes queued frames. Ids are given in the order frames go
// out, which a going-away frame relies on.
func (cc *clientConn) writeLoop() {
	err := writeQueued(cc.conn, cc.queue, cc.broken, func(cl *call) []byte {
		if !cc.take(cl) {
			return nil
		}
		frame := cl.frame
		cl.frame = nil
		return frame
	})
	if err != nil {
		cc.fail(err, nil)
	}
}

// readLoop hands each answer to the call waiting for it.
func (cc *clientConn) readLoop(br *bufio.Reader) {
	for {
		id, payload, err := readFrame(br, MaxFrame)
		if err != nil {
			cc.fail(err, nil)
			return
		}
		if id == goAwayID {
			if len(payload) != 8 {
				cc.fail(errors.New("malformed going-away frame"), nil)
				return
			}
			last := binary.BigEndian.Uint64(payload)
			cc.fail(errors.New("the server is shutting down"), &last)
			return
		}
		cc.mu.Lock()
		cl, ok := cc.pending[id]
		delete(cc.pending, id)
		b := cc.closeIfIdleLocked()
		cc.mu.Unlock()
		if ok {
			cl.answer = payload
			close(cl.done)
		}
		if b.broke {
			b.finish(cc, nil)
			return
		}
	}
}
