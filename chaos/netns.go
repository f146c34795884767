package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// netLab gives every node its own network namespace, joined by a bridge
// in a "switch" namespace, plus one veth from this (the client's)
// namespace to the bridge. Faults are then real network faults made with
// iptables and netem inside the node namespaces. It needs root and
// iproute2; Run falls back to process faults when it cannot be made.
type netLab struct {
	tag    string   // short unique suffix of every name
	sw     string   // switch namespace
	ns     []string // one namespace per node
	ips    []string // node addresses
	hostIP string   // the client side's address on the bridge
	netem  bool     // the kernel has the netem qdisc (added latency)
	// nsenter runs the nodes: it enters a network namespace only (see
	// nodeCommand).
	nsenter bool
}

// netnsDir is where `ip netns add` names the namespaces it makes.
const netnsDir = "/run/netns"

// nodeCommand is the command prefix that runs node i in its network
// namespace. nsenter enters the network namespace only. `ip netns exec`
// also gives the node a mount namespace of its own, a copy of this one:
// there every other node's fault filesystem would stay mounted (mounts
// here are private), so that a power cut, which unmounts a node's disk,
// would wait for ever.
func (l *netLab) nodeCommand(i int) []string {
	if l.nsenter {
		return []string{"nsenter", "--net=" + netnsDir + "/" + l.ns[i], "--"}
	}
	return []string{"ip", "netns", "exec", l.ns[i]}
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func newNetLab(n int) (*netLab, error) {
	pid := os.Getpid()
	l := &netLab{tag: fmt.Sprintf("%x", pid%0xfffff), sw: fmt.Sprintf("rcsw%x", pid%0xfffff)}
	subnet := fmt.Sprintf("10.213.%d", pid%250)
	l.hostIP = subnet + ".254"
	steps := [][]string{
		{"ip", "netns", "add", l.sw},
		{"ip", "-n", l.sw, "link", "set", "lo", "up"},
		{"ip", "-n", l.sw, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", l.sw, "link", "set", "br0", "up"},
		{"ip", "link", "add", "rch" + l.tag, "type", "veth", "peer", "name", "rcb" + l.tag},
		{"ip", "link", "set", "rcb" + l.tag, "netns", l.sw},
		{"ip", "-n", l.sw, "link", "set", "rcb" + l.tag, "master", "br0", "up"},
		{"ip", "addr", "add", l.hostIP + "/24", "dev", "rch" + l.tag},
		{"ip", "link", "set", "rch" + l.tag, "up"},
	}
	for i := 0; i < n; i++ {
		ns, ip := fmt.Sprintf("rcn%d%s", i, l.tag), fmt.Sprintf("%s.%d", subnet, i+1)
		in, out := fmt.Sprintf("rci%d%s", i, l.tag), fmt.Sprintf("rco%d%s", i, l.tag)
		l.ns, l.ips = append(l.ns, ns), append(l.ips, ip)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
			[]string{"ip", "link", "add", in, "type", "veth", "peer", "name", out},
			[]string{"ip", "link", "set", in, "netns", ns},
			[]string{"ip", "link", "set", out, "netns", l.sw},
			[]string{"ip", "-n", ns, "addr", "add", ip + "/24", "dev", in},
			[]string{"ip", "-n", ns, "link", "set", in, "up"},
			[]string{"ip", "-n", l.sw, "link", "set", out, "master", "br0", "up"})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			l.close()
			return nil, err
		}
	}
	_, err := exec.LookPath("nsenter")
	l.nsenter = err == nil
	if l.delay(0, 1) == nil {
		l.netem = true
		l.heal(0)
	}
	return l, nil
}

// dev is node i's interface inside its namespace.
func (l *netLab) dev(i int) string { return fmt.Sprintf("rci%d%s", i, l.tag) }

// cut drops all traffic between node i and the given peers (both ways,
// enforced in node i's namespace); the client side stays reachable.
func (l *netLab) cut(i int, peers []int) error {
	for _, p := range peers {
		for _, rule := range [][]string{{"INPUT", "-s"}, {"OUTPUT", "-d"}} {
			if err := run("ip", "netns", "exec", l.ns[i], "iptables", "-A", rule[0], rule[1], l.ips[p], "-j", "DROP"); err != nil {
				return err
			}
		}
	}
	return nil
}

// delay adds latency to everything node i sends.
func (l *netLab) delay(i int, ms int) error {
	return run("ip", "netns", "exec", l.ns[i], "tc", "qdisc", "add", "dev", l.dev(i), "root", "netem", "delay", fmt.Sprintf("%dms", ms))
}

// heal removes every rule and delay of node i.
func (l *netLab) heal(i int) {
	_ = run("ip", "netns", "exec", l.ns[i], "iptables", "-F")
	_ = run("ip", "netns", "exec", l.ns[i], "tc", "qdisc", "del", "dev", l.dev(i), "root")
}

// close deletes the namespaces (and with them every veth).
func (l *netLab) close() {
	for _, ns := range l.ns {
		_ = run("ip", "netns", "del", ns)
	}
	_ = run("ip", "link", "del", "rch"+l.tag)
	_ = run("ip", "netns", "del", l.sw)
}
