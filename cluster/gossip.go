package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/memberlist"
)

// Version is the node software version gossiped to peers.
const Version = "0.2.0"

// nodeMeta is what every node gossips about itself.
type nodeMeta struct {
	ID              string `json:"id"`
	RaftAddr        string `json:"raft"`
	HTTPAddr        string `json:"http"`
	BootstrapExpect int    `json:"expect"`
	Version         string `json:"version"`
	// Bootstrapped is set once the node belongs to a formed cluster; a new
	// node that sees one never bootstraps a cluster of its own.
	Bootstrapped bool `json:"bootstrapped,omitempty"`
	// Boot identifies this process start: a node removed from the cluster
	// is not re-added by the leader until it restarts.
	Boot string `json:"boot"`
	// Leaving is gossiped just before a graceful leave, so peers can tell
	// a node that left from one that failed.
	Leaving bool `json:"leaving,omitempty"`
	// LeaseNs is the read lease this node keeps its promise for: it waited
	// that long before starting raft, and refuses votes for twice as long
	// after a heartbeat (0: read leases off). See readLease.
	LeaseNs int64 `json:"lease_ns,omitempty"`
	// Rules is the highest validation rules level (fsm.Rules*) this node
	// applies; see Node.Rules.
	Rules uint16 `json:"rules,omitempty"`
	// DataDir is the node's data directory, so that no node accepts a
	// table location inside another's (left out when the metadata would
	// not fit memberlist's limit).
	DataDir string `json:"dir,omitempty"`
	// Keys are the fingerprints (clusterapi.KeyFingerprint) of the gossip
	// keys this node has installed, the primary first; none when its
	// gossip is not encrypted.
	Keys []string `json:"keys,omitempty"`
}

// Gossip status of a member.
const (
	StatusAlive   = "alive"
	StatusSuspect = "suspect"
	StatusFailed  = "failed"
	StatusLeft    = "left"
)

type member struct {
	meta   nodeMeta
	status string
	addr   string // gossip address
}

// gossip tracks the members memberlist tells us about. It implements
// memberlist's Delegate (for our metadata) and EventDelegate (for changes).
type gossip struct {
	local nodeMeta
	mu    sync.Mutex
	nodes map[string]member // by node id
	// changed receives a signal (non-blocking) whenever membership changes.
	changed chan struct{}
	// keyring is memberlist's keyring (nil: gossip is not encrypted); it
	// locks itself.
	keyring *memberlist.Keyring
}

func newGossip(local nodeMeta, keyring *memberlist.Keyring) *gossip {
	local.Keys = keyFingerprints(keyring)
	return &gossip{local: local, nodes: map[string]member{}, changed: make(chan struct{}, 1), keyring: keyring}
}

func (g *gossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	local := g.local
	g.mu.Unlock()
	b, _ := json.Marshal(local)
	if len(b) > limit && local.DataDir != "" {
		local.DataDir = ""
		b, _ = json.Marshal(local)
	}
	if len(b) > limit {
		return nil
	}
	return b
}
func (g *gossip) NotifyMsg([]byte)                {}
func (g *gossip) GetBroadcasts(int, int) [][]byte { return nil }
func (g *gossip) LocalState(bool) []byte          { return nil }
func (g *gossip) MergeRemoteState([]byte, bool)   {}

func (g *gossip) NotifyJoin(n *memberlist.Node)   { g.record(n, false) }
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.record(n, false) }
func (g *gossip) NotifyLeave(n *memberlist.Node)  { g.record(n, true) }

// record stores what gossip says of a node. memberlist does not update
// the State of the Node it passes to NotifyLeave, so a departure is told
// apart by the Leaving flag the node gossiped before it left.
func (g *gossip) record(n *memberlist.Node, gone bool) {
	var meta nodeMeta
	if err := json.Unmarshal(n.Meta, &meta); err != nil || meta.ID == "" {
		return // not a raftcat node
	}
	status := StatusAlive
	switch {
	case gone && meta.Leaving:
		status = StatusLeft
	case gone:
		status = StatusFailed
	case n.State == memberlist.StateSuspect:
		status = StatusSuspect
	}
	g.mu.Lock()
	g.nodes[meta.ID] = member{meta: meta, status: status, addr: n.Address()}
	g.mu.Unlock()
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// markBootstrapped records that this node belongs to a formed cluster; it
// reports whether that changed anything (the caller then re-gossips).
func (g *gossip) markBootstrapped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.local.Bootstrapped {
		return false
	}
	g.local.Bootstrapped = true
	return true
}

// noteKeys records the fingerprints of the keys now installed; the
// caller then re-gossips.
func (g *gossip) noteKeys() {
	keys := keyFingerprints(g.keyring)
	g.mu.Lock()
	g.local.Keys = keys
	g.mu.Unlock()
}

// keyHolders counts, over the alive nodes (this one as it is now), the
// nodes that have each key installed and that encrypt with it, by
// fingerprint.
func (g *gossip) keyHolders() (installed, primary map[string]int, alive int) {
	installed, primary = map[string]int{}, map[string]int{}
	g.mu.Lock()
	metas := []nodeMeta{g.local}
	for _, m := range g.nodes {
		if m.status == StatusAlive && m.meta.ID != g.local.ID {
			metas = append(metas, m.meta)
		}
	}
	g.mu.Unlock()
	for _, m := range metas {
		for i, fp := range m.Keys {
			installed[fp]++
			if i == 0 {
				primary[fp]++
			}
		}
	}
	return installed, primary, len(metas)
}

// markLeaving records that this node is about to leave gossip.
func (g *gossip) markLeaving() {
	g.mu.Lock()
	g.local.Leaving = true
	g.mu.Unlock()
}

// get returns a member by node id.
// dataDirs lists the data directories members gossiped, this node's
// first.
func (g *gossip) dataDirs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	dirs := []string{g.local.DataDir}
	for _, m := range g.nodes {
		if m.meta.DataDir != "" && m.meta.ID != g.local.ID {
			dirs = append(dirs, m.meta.DataDir)
		}
	}
	return dirs
}

func (g *gossip) get(id string) (member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.nodes[id]
	return m, ok
}

// members returns all known members sorted by id.
func (g *gossip) members() []member {
	g.mu.Lock()
	out := make([]member, 0, len(g.nodes))
	for _, m := range g.nodes {
		out = append(out, m)
	}
	g.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].meta.ID < out[j].meta.ID })
	return out
}

// memberlistLogger routes memberlist's log lines into slog, dropping its
// chatty debug output, and says plainly when a message was refused for
// its gossip key (see keyRefusal).
func memberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(&levelFilter{l: l, special: keyRefusal}, "", 0)
}

// levelFilter turns the "[LEVEL] message" lines of raft's and
// memberlist's loggers into slog records of the matching level. A line
// above debug that special recognises is a warning in the words special
// gives it instead.
type levelFilter struct {
	l       *slog.Logger
	special func(line string) (msg string, attrs []any, ok bool)
}

var levelPrefixes = []struct {
	prefix string
	level  slog.Level
}{
	{"[DEBUG]", slog.LevelDebug}, {"[TRACE]", slog.LevelDebug - 4}, {"[ERROR]", slog.LevelError},
	{"[ERR]", slog.LevelError}, {"[WARN]", slog.LevelWarn}, {"[INFO]", slog.LevelInfo},
}

func (f *levelFilter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(bytes.TrimSpace(p)))
	level := slog.LevelInfo
	for _, lp := range levelPrefixes {
		if i := strings.Index(line, lp.prefix); i >= 0 {
			level, line = lp.level, strings.TrimSpace(line[i+len(lp.prefix):])
			break
		}
	}
	if level == slog.LevelWarn && firstElection(line) {
		level = slog.LevelInfo
	}
	if f.special != nil && level > slog.LevelDebug {
		if msg, attrs, ok := f.special(line); ok {
			f.l.Warn(msg, attrs...)
			return len(p), nil
		}
	}
	f.l.Log(context.Background(), level, line)
	return len(p), nil
}

// firstElection reports whether raft's line is the election a node starts
// when it has never known a leader (a fresh node, or one just restarted):
// that is how a cluster begins, not a warning. The same line after a
// leader was lost names that leader and stays a warning.
func firstElection(line string) bool {
	return strings.HasPrefix(line, "raft: heartbeat timeout reached, starting election") &&
		strings.Contains(line, "last-leader-addr=") && strings.Trim(fieldOf(line, "last-leader-addr="), `"`) == ""
}

// keyMismatches are memberlist's words for a message from a node that
// holds none of this node's gossip keys, or that encrypts when this node
// does not, or the other way round.
var keyMismatches = []string{"no installed keys could decrypt the message",
	"encryption is configured but remote state is not encrypted", "remote state is encrypted and encryption is not configured"}

// keyRefusal makes a message memberlist refused for its key a warning
// that says so and names the sender's address: a node started with a
// wrong gossip key keeps trying to join, and an operator must find it.
func keyRefusal(line string) (string, []any, bool) {
	lower := strings.ToLower(line)
	for _, m := range keyMismatches {
		if strings.Contains(lower, m) {
			msg := "gossip refused a message: " + m + " (the sender's gossip key is wrong or missing, or it missed a key rotation)"
			return msg, []any{"from", fieldOf(line, "from="), "detail", line}, true
		}
	}
	return "", nil, false
}

// fieldOf is the value of a key=value word in a log line ("" if none).
func fieldOf(line, key string) string {
	i := strings.Index(line, key)
	if i < 0 {
		return ""
	}
	v, _, _ := strings.Cut(line[i+len(key):], " ")
	return v
}

// splitHostPort parses host:port with a numeric port.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return host, port, err
}

// peerAddrs returns the gossip addresses of the other alive members.
func (g *gossip) peerAddrs(self string) []string {
	var out []string
	for _, m := range g.members() {
		if m.meta.ID != self && m.status == StatusAlive && m.addr != "" {
			out = append(out, m.addr)
		}
	}
	return out
}

const peersFile = "gossip-peers.json"

// loadPeers reads the peers saved by a previous run (none if absent).
func loadPeers(dataDir string) []string {
	b, err := os.ReadFile(filepath.Join(dataDir, peersFile))
	if err != nil {
		return nil
	}
	var peers []string
	_ = json.Unmarshal(b, &peers)
	return peers
}

// savePeers records the known peers atomically and durably: a node
// restarted after a power cut without --join finds its cluster again.
func savePeers(dataDir string, peers []string) error {
	return writeJSONFile(filepath.Join(dataDir, peersFile), peers, 0o640)
}

// mergePeers joins address lists without duplicates, in order.
func mergePeers(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, a := range l {
			if a != "" && !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}
