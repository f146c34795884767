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
	onLog   func() // called for every change (the metric)
}

func (l *leaderLog) add(c clusterapi.LeaderChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.changes) == keptLeaderChanges {
		l.changes = append(l.changes[:0], l.changes[1:]...)
	}
	l.changes = append(l.changes, c)
	if l.onLog != nil {
		l.onLog()
	}
}

func (l *leaderLog) list() []clusterapi.LeaderChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]clusterapi.LeaderChange{}, l.changes...)
}

// watchLeaders records every change of leader raft reports until the node
// stops.
func (n *Node) watchLeaders() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	defer n.raft.DeregisterObserver(obs)
	for {
		select {
		case <-n.stop:
			return
		case o := <-ch:
			lo := o.Data.(raft.LeaderObservation)
			n.leaders.add(clusterapi.LeaderChange{AtUnixMs: time.Now().UnixMilli(), Term: n.raft.CurrentTerm(),
				LeaderID: string(lo.LeaderID)})
		}
	}
}
