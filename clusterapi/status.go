package clusterapi

import (
	"crypto/sha256"
	"encoding/hex"
)

// Member is one server of the raft configuration as /v1/cluster shows it.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
	Status   string `json:"status"` // gossip status: alive, suspect, failed, left, unknown
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
}

// Status is a node's view of the cluster.
type Status struct {
	NodeID       string `json:"node_id"`
	State        string `json:"state"`
	LeaderID     string `json:"leader_id"`
	LeaderHTTP   string `json:"leader_http_addr,omitempty"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	LastIndex    uint64 `json:"last_index"`
	LastLogTerm  uint64 `json:"last_log_term"`
	// LastContactMs is the time since this node last heard from the leader
	// (0 on the leader, -1 if never).
	LastContactMs int64 `json:"last_contact_ms"`
	// LastSnapshotIndex is the index of this node's newest raft snapshot.
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
	// SnapshotRestores counts snapshots restored since the process started
	// (installed from the leader, or a backup restore).
	SnapshotRestores uint64         `json:"snapshot_restores"`
	Members          []Member       `json:"members"`
	Gossip           []GossipMember `json:"gossip"`
	// GroupCommit counts the proposals this node sent to raft and the
	// batches they left in: proposals per batch is the group-commit gain.
	GroupCommit GroupCommitStats `json:"group_commit"`
	// Reads counts this node's linearizable reads by how leadership was
	// confirmed: under its lease, or by a quorum round.
	Reads ReadStats `json:"reads"`
	// CommandsApplied counts the commands this node's state machine
	// applied since the process started (every node applies them all).
	CommandsApplied uint64 `json:"commands_applied"`
	// LeaderChanges are the latest changes of leader this node saw since
	// it started, oldest first.
	LeaderChanges []LeaderChange `json:"leader_changes"`
	// Autopilot is the leader's view of server health (leader only).
	Autopilot *AutopilotStatus `json:"autopilot,omitempty"`
}

// AutopilotStatus summarises autopilot's health view.
type AutopilotStatus struct {
	Healthy          bool            `json:"healthy"`
	FailureTolerance int             `json:"failure_tolerance"`
	Servers          map[string]bool `json:"servers_healthy"`
}

// GossipMember is a node as gossip sees it, whether or not it is in the
// raft configuration.
type GossipMember struct {
	ID         string `json:"id"`
	GossipAddr string `json:"gossip_addr"`
	RaftAddr   string `json:"raft_addr"`
	HTTPAddr   string `json:"http_addr"`
	Status     string `json:"status"`
	Version    string `json:"version"`
}

// GroupCommitStats counts proposals, the batches they left in, and those
// answered without a log entry.
type GroupCommitStats struct {
	Proposals          uint64 `json:"proposals"`
	Batches            uint64 `json:"batches"`
	LargestBatch       int    `json:"largest_batch"`
	AnsweredWithoutLog uint64 `json:"answered_without_log"`
}

// ReadStats counts linearizable reads answered under the leader's lease
// and the quorum rounds taken for the others.
type ReadStats struct {
	Lease        uint64 `json:"lease"`
	QuorumRounds uint64 `json:"quorum_rounds"`
}

// LeaderChange is a change of leader this node observed: the new leader
// ("" while there is none) and the term it was seen in.
type LeaderChange struct {
	AtUnixMs int64  `json:"at_unix_ms"`
	Term     uint64 `json:"term"`
	LeaderID string `json:"leader_id"`
}

// GossipKeys is the cluster's gossip encryption as a node sees it: each
// key by its fingerprint, never the key itself.
type GossipKeys struct {
	// Encrypted is whether this node's gossip is encrypted (it was started
	// with a gossip key file); nodes of one cluster all are or all are not.
	Encrypted bool `json:"encrypted"`
	// Alive counts the nodes gossip sees alive, this one included.
	Alive int         `json:"alive_nodes"`
	Keys  []GossipKey `json:"keys"`
}

// GossipKey is one gossip key an alive node has installed or the
// replicated keyring holds.
type GossipKey struct {
	Fingerprint string `json:"fingerprint"` // see KeyFingerprint
	Installed   int    `json:"installed"`   // alive nodes that decrypt with it
	Primary     int    `json:"primary"`     // alive nodes that encrypt with it
	Alive       int    `json:"alive"`       // alive nodes
	// Replicated is whether the replicated keyring, which every node
	// installs once it has applied it, holds the key; ReplicatedPrimary
	// whether it is that keyring's primary.
	Replicated        bool `json:"replicated"`
	ReplicatedPrimary bool `json:"replicated_primary"`
}

// KeyFingerprint names a gossip key without revealing it: the first 8
// hex digits of the SHA-256 of the raw key.
func KeyFingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}
