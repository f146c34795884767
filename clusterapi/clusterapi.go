// Package clusterapi is what the replication layer shows the code that
// uses it: the errors its data path and its operations fail with, and a
// node's status report. It is a leaf: it imports neither raft, nor
// gossip, nor the log store, so the HTTP layer depends on it and not on
// package cluster. Package cluster returns exactly these values (and
// re-exports them under its own names), so errors.Is matches either name.
package clusterapi

import "errors"

// Errors of the data path (propose, read, forward).
var (
	// ErrNotLeader means this node cannot serve the request because it is
	// not the leader; the command was not proposed.
	ErrNotLeader = errors.New("not the leader")
	// ErrNoLeader means the cluster currently has no known leader.
	ErrNoLeader = errors.New("no leader")
	// ErrUnknownOutcome means a command was proposed but leadership was
	// lost or the wait timed out before its result was known: it may or
	// may not have been applied. A byte-identical retry resolves it.
	ErrUnknownOutcome = errors.New("outcome unknown: leadership lost or timed out after proposing")
	// ErrShutdown means the node is shutting down.
	ErrShutdown = errors.New("node is shutting down")
	// ErrBusy means the leader could not take the command in time (its
	// queue of proposals stayed full); the command was not proposed.
	ErrBusy = errors.New("the leader is too busy to take the request")
	// ErrUpgradePending means the command needs every node to run a
	// newer release than some still do; nothing was proposed.
	ErrUpgradePending = errors.New("not every node runs a release that knows this command yet")
	// ErrInsufficientStorage means the leader's disk is (nearly) full:
	// the command was not proposed. Writes resume once space is freed.
	ErrInsufficientStorage = errors.New("the leader's disk is full")
)

// Errors of cluster operations (backup restore, membership).
var (
	// ErrBadSnapshot means an uploaded snapshot was refused (corrupt,
	// truncated, or not a raftcat snapshot); nothing was changed.
	ErrBadSnapshot = errors.New("snapshot refused")
	// ErrUnknownServer means the named node is not in the configuration.
	ErrUnknownServer = errors.New("no such server in the raft configuration")
	// ErrLastVoter means the request would leave the cluster without voters.
	ErrLastVoter = errors.New("this node is the cluster's only voter")
	// ErrNoPeer means leadership cannot be handed over: no other voter
	// can take it.
	ErrNoPeer = errors.New("no other voter to hand leadership to")
)
