package cluster

import "errors"

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
)
