package cluster

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestStreamLayerKeepsHostNamesAndDialsThem(t *testing.T) {
	s, _ := openPort(t, nil, time.Second)
	_, port, _ := net.SplitHostPort(s.Addr().String())
	named, err := newStreamLayer("127.0.0.1:0", "localhost:"+port, s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	if got := named.Addr().String(); got != "localhost:"+port {
		t.Fatalf("advertised %q, want the host name kept", got)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := s.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := named.Dial(raft.ServerAddress("localhost:"+port), time.Second)
	if err != nil {
		t.Fatalf("dial by host name: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0}); err != nil { // a raft RPC type: what routes it to raft
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
}

func TestStreamLayerRefusesUnreachableAdvertise(t *testing.T) {
	if _, err := newStreamLayer("0.0.0.0:0", "", portConfig{}); err == nil || !strings.Contains(err.Error(), "advertise") {
		t.Fatalf("binding all interfaces without an advertise address: %v", err)
	}
	if _, err := newStreamLayer("127.0.0.1:0", "no-port", portConfig{}); err == nil {
		t.Fatal("advertise address without a port was accepted")
	}
}
