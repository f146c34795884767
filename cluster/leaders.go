package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/clusterapi"
)

// keptLeaderChanges is how many changes of leader a node remembers.
const keptLeaderChanges = 32

// leaderLog remembers the latest changes of leader this node observed.
type leaderLog struct {
	mu      sync.Mutex
	changes []clusterapi.LeaderChange
}

func (l *leaderLog) add(c clusterapi.LeaderChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.changes) == keptLeaderChanges {
		l.changes = append(l.changes[:0], l.changes[1:]...)
	}
	l.changes = append(l.changes, c)
}

func (l *leaderLog) list() []clusterapi.LeaderChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]clusterapi.LeaderChange{}, l.changes...)
}

// watchLeaders registers an observer of raft's changes of leader as soon
// as raft runs, so that the first election is seen; recordLeaders, started
// once the node is open, records what it buffered and what follows.
func (n *Node) watchLeaders() {
	n.leaderCh = make(chan raft.Observation, 16)
	n.leaderObs = raft.NewObserver(n.leaderCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(n.leaderObs)
}

// recordLeaders records every change of leader until the node stops.
func (n *Node) recordLeaders() {
	defer n.raft.DeregisterObserver(n.leaderObs)
	for {
		select {
		case <-n.stop:
			return
		case o := <-n.leaderCh:
			lo := o.Data.(raft.LeaderObservation)
			if lo.LeaderID != "" && string(lo.LeaderID) != n.cfg.NodeID {
				n.sawOtherLeader.Store(true)
			}
			n.leaders.add(clusterapi.LeaderChange{AtUnixMs: time.Now().UnixMilli(), Term: n.raft.CurrentTerm(),
				LeaderID: string(lo.LeaderID)})
			n.metrics.leaderChange.Inc()
		}
	}
}
