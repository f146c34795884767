package localcluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePorts returns n loopback ports, free for TCP and UDP a moment ago,
// for nodes started as processes to bind.
//
// They are drawn at random from below the kernel's ephemeral port range.
// A port the kernel picks (for a listener on port 0, as in-process test
// clusters bind, or for the local end of an outgoing connection) is never
// there, so between this check and the node binding the port, only an
// explicit choice like this one can take it. Where the range is unknown,
// the kernel picks.
func FreePorts(n int) ([]int, error) {
	lo, hi, ok := reservable()
	if !ok {
		return kernelPorts(n)
	}
	var held []func()
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("localcluster: found %d free ports of %d in [%d, %d)", len(ports), n, lo, hi)
		}
		p := lo + rand.IntN(hi-lo)
		if release, ok := hold(p); ok {
			held = append(held, release)
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// reservable is the range ports are drawn from: up to 10,000 ports below
// the ephemeral range's start, above 1024.
func reservable() (lo, hi int, ok bool) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	start, err := strconv.Atoi(strings.Fields(string(raw) + " x")[0])
	if err != nil || start <= 2048 {
		return 0, 0, false
	}
	return max(1025, start-10000), start, true
}

// hold binds port p on loopback for TCP and UDP (gossip uses both).
func hold(p int) (release func(), ok bool) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		ln.Close()
		return nil, false
	}
	return func() { ln.Close(); pc.Close() }, true
}

// kernelPorts lets the kernel pick n free ports.
func kernelPorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
