package cluster

import "github.com/raftcat/raftcat/clusterapi"

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
