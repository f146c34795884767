package cluster

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// peerHTTPMarker is the first byte of a peer HTTP connection on the
// cluster port. A raft connection starts with raft's RPC type, 0 to 4
// (hashicorp/raft's rpcAppendEntries to rpcRequestPreVote), never 'H'.
const peerHTTPMarker = 'H'

// handshakeTimeout bounds an incoming connection's TLS handshake.
const handshakeTimeout = 10 * time.Second

// acceptPause is the wait after a failed accept (out of file
// descriptors, say) before the next one.
const acceptPause = 100 * time.Millisecond

// serve accepts the cluster port's connections, each handled on its own
// so that a slow or bad one never holds up the others.
func (s *streamLayer) serve() {
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			s.cfg.log.Warn("cluster port could not accept a connection", "err", err)
			if !s.pause(acceptPause) {
				return
			}
			continue
		}
		go s.handle(c)
	}
}

// pause waits d or until the port closes; it returns false on close.
func (s *streamLayer) pause(d time.Duration) bool { return waitOrStop(d, s.closed) }

// handle secures a connection (the TLS handshake within the deadline),
// reads its first byte and hands it to peer HTTP or to raft. The wait
// for the first byte has no deadline, as raft's own had none: raft opens
// connections it writes to only later (a replication pipeline stays
// silent until there are entries), and with TLS the peer has proved it
// is a node by then.
func (s *streamLayer) handle(raw net.Conn) {
	if !s.track(raw) {
		raw.Close()
		return
	}
	defer s.untrack(raw)
	c, err := s.secure(raw)
	if err != nil {
		s.refuse(raw, c, err)
		return
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(c, first); err != nil {
		s.refuse(raw, c, err)
		return
	}
	if first[0] == peerHTTPMarker {
		s.toPeer(c)
		return
	}
	s.toRaft(&rewoundConn{Conn: c, first: first}, c)
}

// secure runs the TLS server handshake when the port has TLS.
func (s *streamLayer) secure(raw net.Conn) (net.Conn, error) {
	if s.cfg.tls == nil {
		return raw, nil
	}
	c := tls.Server(raw, s.cfg.tls.ServerConfig())
	if err := raw.SetDeadline(time.Now().Add(s.cfg.handshake)); err != nil {
		return c, err
	}
	if err := c.Handshake(); err != nil {
		return c, err
	}
	return c, raw.SetDeadline(time.Time{})
}

// toPeer hands c to the peer HTTP listener, or closes it when no one
// takes it in time.
func (s *streamLayer) toPeer(c net.Conn) {
	if s.peer.deliver(c, s.cfg.handshake) {
		s.cfg.log.Debug("accepted a peer HTTP connection", "remote", c.RemoteAddr().String(), "peer", peerName(c))
		return
	}
	c.Close()
	if !s.isClosed() {
		s.cfg.log.Warn("closed a peer HTTP connection that nothing on this node took in time", "remote", c.RemoteAddr().String(),
			"peer", peerName(c))
	}
}

// toRaft hands c to raft's Accept; secured is c as the port secured it.
func (s *streamLayer) toRaft(c, secured net.Conn) {
	select {
	case s.raftConns <- c:
		s.cfg.log.Debug("accepted a raft connection", "remote", c.RemoteAddr().String(), "peer", peerName(secured))
	case <-s.closed:
		c.Close()
	}
}

// track records a connection being handled, so Close can end it; it
// returns false once the port is closed.
func (s *streamLayer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
		return false
	default:
		s.pending[c] = struct{}{}
		return true
	}
}

func (s *streamLayer) untrack(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, c)
}

// refuse closes a connection that failed before it was handed over, and
// reports why: a warning (throttled per remote) and the refusal counter.
// A connection the remote closed before saying anything (a port probe),
// or one ended by the port's Close, is not a refusal.
func (s *streamLayer) refuse(raw, c net.Conn, err error) {
	raw.Close()
	remote := raw.RemoteAddr().String()
	if s.isClosed() || goneQuietly(err) {
		s.cfg.log.Debug("a cluster connection ended before it said anything", "remote", remote, "err", err)
		return
	}
	r := refusalOf(err)
	s.cfg.refused.WithLabelValues(r.label).Inc()
	log, suppressed := s.refusals.admit(remoteIP(raw.RemoteAddr()))
	if !log {
		return
	}
	s.cfg.log.Warn("refused a cluster connection", "remote", remote, "reason", r.words, "peer", peerName(c),
		"suppressed_since_last", suppressed, "err", err)
}

func (s *streamLayer) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// goneQuietly reports whether the remote closed or reset the connection.
func goneQuietly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// peerName is the CommonName of the certificate a TLS peer presented
// (even one refused), or "".
func peerName(c net.Conn) string {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return ""
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		return certs[0].Subject.CommonName
	}
	return ""
}

// remoteIP is the host of a remote address, the key refusals are
// throttled by.
func remoteIP(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	return a.String()
}
