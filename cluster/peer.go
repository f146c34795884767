package cluster

import (
	"context"
	"net"
	"sync"
	"time"
)

// LeaderPeerAddr is the leader's cluster address (host:port), where
// DialPeer reaches it.
func (n *Node) LeaderPeerAddr() (string, error) {
	addr, id := n.raft.LeaderWithID()
	if id == "" || addr == "" {
		return "", ErrNoLeader
	}
	return string(addr), nil
}

// DialPeer connects to a peer's cluster address for peer HTTP: the
// mutual-TLS handshake when the cluster port has TLS, then the marker
// byte that routes the connection to the peer's PeerListener.
func (n *Node) DialPeer(ctx context.Context, addr string) (net.Conn, error) {
	return n.port.dialPeer(ctx, addr)
}

// PeerListener yields the peer HTTP connections the cluster port
// accepted; with TLS each is a *tls.Conn whose ConnectionState holds the
// peer's verified node certificate. It is closed on Shutdown.
func (n *Node) PeerListener() net.Listener { return n.port.peer }

// peerListener is a net.Listener over the peer HTTP connections the
// cluster port routes to it.
type peerListener struct {
	addr      net.Addr
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func newPeerListener(addr net.Addr) *peerListener {
	return &peerListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *peerListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; the cluster port then closes peer HTTP connections
// as they come. The cluster port itself stays open.
func (l *peerListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *peerListener) Addr() net.Addr { return l.addr }

// deliver hands c to Accept; it reports false when the listener is
// closed or no Accept took c within wait.
func (l *peerListener) deliver(c net.Conn, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	case <-t.C:
		return false
	}
}
