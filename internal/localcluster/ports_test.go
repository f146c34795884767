package localcluster

import (
	"net"
	"strconv"
	"testing"
)

// The ports are distinct, bindable, and below the ephemeral range, where
// listeners on port 0 never land.
func TestFreePortsAreBelowTheEphemeralRange(t *testing.T) {
	lo, hi, ok := reservable()
	ports, err := FreePorts(30)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || ok && (p < lo || p >= hi) {
			t.Fatalf("port %d repeated or outside [%d, %d)", p, lo, hi)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
	if !ok {
		return
	}
	for range 200 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if p := ln.Addr().(*net.TCPAddr).Port; p >= lo && p < hi {
			t.Fatalf("the kernel picked %d, inside the range ports are drawn from", p)
		}
		ln.Close()
	}
}
