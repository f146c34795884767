package cluster

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer with an advertise address that
// may be a host name. Raft stores the advertised string in its
// configuration and peers resolve it on every dial, so a node whose IP
// changes (a container recreated on a new network) keeps its identity.
// It is also where transport security between nodes plugs in.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
}

// hostAddr is a net.Addr that keeps a host:port string as given.
type hostAddr string

func (a hostAddr) Network() string { return "tcp" }
func (a hostAddr) String() string  { return string(a) }

func newStreamLayer(bind, advertise string) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &streamLayer{ln: ln, advertise: ln.Addr()}
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
	return s, nil
}

func (s *streamLayer) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *streamLayer) Close() error              { return s.ln.Close() }
func (s *streamLayer) Addr() net.Addr            { return s.advertise }

// Dial connects to a peer, resolving its address now.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}
