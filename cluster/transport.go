package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/internal/tlsutil"
)

// streamLayer is raft's stream layer over the cluster port, with an
// advertise address that may be a host name. Raft stores the advertised
// string in its configuration and peers resolve it on every dial, so a
// node whose IP changes (a container recreated on a new network) keeps its
// identity. The cluster port carries raft's RPCs and peer HTTP, with
// mutual TLS when configured (see serve).
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	cfg       portConfig
	raftConns chan net.Conn // connections for raft's Accept
	peer      *peerListener
	refusals  *refusalLog

	closed    chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	pending   map[net.Conn]struct{} // accepted, not handed over yet
}

// portConfig is how the cluster port secures and reports its connections.
type portConfig struct {
	tls *tlsutil.Cluster // nil: plaintext, as releases before TLS spoke
	log *slog.Logger
	// refused counts refused connections by reason.
	refused *prometheus.CounterVec
	// handshake bounds an incoming connection's TLS handshake.
	handshake time.Duration
	// logEvery is how often at most a refusal from one remote is logged.
	logEvery time.Duration
}

// hostAddr is a net.Addr that keeps a host:port string as given.
type hostAddr string

func (a hostAddr) Network() string { return "tcp" }
func (a hostAddr) String() string  { return string(a) }

// newStreamLayer listens on bind and serves the cluster port.
func newStreamLayer(bind, advertise string, cfg portConfig) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &streamLayer{ln: ln, advertise: ln.Addr(), cfg: cfg, raftConns: make(chan net.Conn),
		refusals: newRefusalLog(cfg.logEvery, time.Now), closed: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	if advertise != "" {
		if _, _, err := net.SplitHostPort(advertise); err != nil {
			ln.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		s.advertise = hostAddr(advertise)
	} else if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %q binds all interfaces: set an advertise address peers can reach", bind)
	}
	s.peer = newPeerListener(s.advertise)
	go s.serve()
	return s, nil
}

// Accept returns the next raft connection the cluster port accepted.
func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.raftConns:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close stops the cluster port: the listener, the peer HTTP listener,
// and the connections not handed over yet.
func (s *streamLayer) Close() error {
	err := net.ErrClosed
	s.closeOnce.Do(func() {
		s.mu.Lock()
		close(s.closed)
		for c := range s.pending {
			c.Close()
		}
		s.mu.Unlock()
		s.peer.Close()
		err = s.ln.Close()
	})
	return err
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Dial connects raft to a peer, resolving its address now; with TLS the
// handshake completes within timeout, so a refused certificate is a
// dial error raft reports.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.dial(ctx, string(address))
}

// dial connects to a peer's cluster port: plain TCP, or TLS presenting
// this node's certificate and accepting a node certificate of the
// cluster CA made for the host dialled.
func (s *streamLayer) dial(ctx context.Context, addr string) (net.Conn, error) {
	if s.cfg.tls == nil {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("cluster address %q: %w", addr, err)
	}
	d := tls.Dialer{Config: s.cfg.tls.ClientConfig(host)}
	return d.DialContext(ctx, "tcp", addr)
}

// admit checks, before a gossip member becomes a voter, that its cluster
// port presents a node certificate of the cluster CA for the address it
// gossips: with TLS a member gossip let in is not trusted until then.
// Without TLS every member is admitted.
func (s *streamLayer) admit(addr string) error {
	if s.cfg.tls == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), admitTimeout)
	defer cancel()
	c, err := s.dial(ctx, addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// admitTimeout bounds admit's handshake.
const admitTimeout = 5 * time.Second

// dialPeer connects to a peer's cluster port for peer HTTP.
func (s *streamLayer) dialPeer(ctx context.Context, addr string) (net.Conn, error) {
	c, err := s.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("dial peer %s: %w", addr, err)
	}
	if _, err := c.Write([]byte{peerHTTPMarker}); err != nil {
		c.Close()
		return nil, fmt.Errorf("dial peer %s: %w", addr, err)
	}
	return c, nil
}

// rewoundConn is a raft connection whose first byte the cluster port
// read to route it: its first Read gives that byte back.
type rewoundConn struct {
	net.Conn
	first []byte
}

func (c *rewoundConn) Read(p []byte) (int, error) {
	if len(c.first) == 0 || len(p) == 0 {
		return c.Conn.Read(p)
	}
	n := copy(p, c.first)
	c.first = c.first[n:]
	return n, nil
}
