package cluster

import (
	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/internal/raftlog"
)

// Errors of the data path; they are clusterapi's (see there), so the HTTP
// layer matches them without depending on this package.
var (
	ErrNotLeader      = clusterapi.ErrNotLeader
	ErrNoLeader       = clusterapi.ErrNoLeader
	ErrUnknownOutcome = clusterapi.ErrUnknownOutcome
	ErrShutdown       = clusterapi.ErrShutdown
	ErrBusy           = clusterapi.ErrBusy
	ErrUpgradePending = clusterapi.ErrUpgradePending

	ErrInsufficientStorage = clusterapi.ErrInsufficientStorage
)

// ErrLogDamaged means the raft log holds damaged records (a node will not
// start on it; see raftlog.ErrDamaged).
var ErrLogDamaged = raftlog.ErrDamaged
