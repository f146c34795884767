package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/snapshot"
)

// Errors of cluster operations; they are clusterapi's.
var (
	ErrBadSnapshot   = clusterapi.ErrBadSnapshot
	ErrUnknownServer = clusterapi.ErrUnknownServer
	ErrLastVoter     = clusterapi.ErrLastVoter
)

// Done is closed once the node has stopped for good: after Shutdown, or
// after it noticed it was removed from the cluster.
func (n *Node) Done() <-chan struct{} { return n.done }

// StateDigest returns the index this node's state reflects and a digest of
// that state; replicas at the same index have the same digest.
func (n *Node) StateDigest() (uint64, string) {
	st, idx := n.fsm.View()
	// A state is immutable, so its digest is computed once: hashing a
	// large catalog takes a while, and convergence checks poll this.
	n.digestMu.Lock()
	defer n.digestMu.Unlock()
	if n.digestOf != st {
		n.digestOf, n.digest = st, st.Digest()
	}
	return idx, n.digest
}

// WriteSnapshot streams a consistent snapshot of the state, as of a
// linearizable read, to w. Only the leader can do it.
func (n *Node) WriteSnapshot(ctx context.Context, w io.Writer) error {
	st, idx, err := n.LinearizableState(ctx)
	if err != nil {
		return err
	}
	hdr := snapshot.Header{Index: idx, Term: n.raft.CurrentTerm(), CreatedUnixMs: time.Now().UnixMilli(),
		Meta: map[string]string{"node_id": n.cfg.NodeID, "raftcat_version": Version}}
	return snapshot.WriteState(w, st, hdr)
}

// Restore replaces the whole cluster state with a snapshot (a backup made
// by WriteSnapshot). The upload is verified completely (checksum and every
// record) before raft sees it, so a bad file changes nothing. Raft then
// installs it on this leader and on every follower.
func (n *Node) Restore(ctx context.Context, r io.Reader) (snapshot.Header, error) {
	if n.raft.State() != raft.Leader {
		return snapshot.Header{}, ErrNotLeader
	}
	f, err := os.CreateTemp(filepath.Join(n.cfg.DataDir, "raft"), "restore-*.snap")
	if err != nil {
		return snapshot.Header{}, fmt.Errorf("restore: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size, err := io.Copy(f, r)
	if err != nil {
		return snapshot.Header{}, fmt.Errorf("restore: receiving snapshot: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return snapshot.Header{}, err
	}
	verified, hdr, err := snapshot.ReadState(f)
	if err != nil {
		return snapshot.Header{}, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	n.fsm.offerVerified(verified, hdr)
	defer n.fsm.offerVerified(nil, snapshot.Header{})
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return snapshot.Header{}, err
	}
	// Raft installs the snapshot at an index above both its own last index
	// and this one. The state's header keeps the backup's index, so a
	// replica that restores it reports an applied index at or below the
	// true one (never above, which would let a read skip a wait) until the
	// next entry moves it forward.
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Size: size, Index: hdr.Index, Term: hdr.Term}
	// Raft's timeout covers installing the snapshot here and on a quorum
	// of followers, and once it has fired raft may report a restore that
	// succeeded as a timeout. A large catalog takes minutes, so allow a
	// second per MiB on top of the apply timeout.
	timeout := n.cfg.ApplyTimeout + time.Duration(size>>20)*time.Second
	if err := n.raft.Restore(meta, f, timeout); err != nil {
		return snapshot.Header{}, mapRaftError(err)
	}
	// Raft placed the restored state at a new index; record it, then apply
	// an entry of our own so that every replica's applied index moves past it.
	n.fsm.advance(n.raft.AppliedIndex(), n.raft.CurrentTerm())
	n.readyTerm.Store(0)
	n.establish(n.raft.CurrentTerm())
	n.log.Info("restored cluster state from a snapshot", "snapshot_index", hdr.Index, "snapshot_term", hdr.Term,
		"bytes", size, "now_at_index", n.raft.AppliedIndex())
	return hdr, ctx.Err()
}

// TransferLeadership hands leadership to the given node, or to the most
// up-to-date follower when id is empty. Only the leader can do it.
func (n *Node) TransferLeadership(ctx context.Context, id string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	var f raft.Future
	n.lease.endForTerm() // followers will vote for the target despite their leader
	if id == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		addr, ok := n.serverAddress(id)
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownServer, id)
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(id), addr)
	}
	if err := f.Error(); err != nil {
		return fmt.Errorf("transfer leadership: %w", err)
	}
	return n.WaitForLeader(ctx)
}

func (n *Node) serverAddress(id string) (raft.ServerAddress, bool) {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return "", false
	}
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == id {
			return s.Address, true
		}
	}
	return "", false
}

// RemoveServer removes a node from the raft configuration. The leader
// remembers the removed process so gossip does not bring it back; a node
// restarted later (a new process) is added again. Only the leader can do it.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	if _, ok := n.serverAddress(id); !ok {
		return fmt.Errorf("%w: %s", ErrUnknownServer, id)
	}
	if m, ok := n.gossip.get(id); ok {
		n.removedMu.Lock()
		n.removed[m.meta.Boot] = true
		n.removedMu.Unlock()
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout).Error(); err != nil {
		return mapRaftError(err)
	}
	n.log.Info("removed server from the cluster", "node", id)
	return ctx.Err()
}

func (n *Node) wasRemoved(boot string) bool {
	n.removedMu.Lock()
	defer n.removedMu.Unlock()
	return n.removed[boot]
}

// PrepareLeave readies this node to leave: it refuses when it is the only
// voter, and hands leadership over first when it leads.
func (n *Node) PrepareLeave(ctx context.Context) error {
	voters := 0
	if cf := n.raft.GetConfiguration(); cf.Error() == nil {
		for _, s := range cf.Configuration().Servers {
			if s.Suffrage == raft.Voter && string(s.ID) != n.cfg.NodeID {
				voters++
			}
		}
	}
	if voters == 0 {
		return ErrLastVoter
	}
	n.announceLeaving()
	if n.raft.State() == raft.Leader {
		n.log.Info("leaving: handing leadership over first")
		if err := n.TransferLeadership(ctx, ""); err != nil {
			return err
		}
	}
	return n.WaitForLeader(ctx)
}

// removalWatch stops the node once it sees it is no longer part of the
// cluster (raft shuts itself down when it applies its own removal).
func (n *Node) removalWatch() {
	for n.sleep(200 * time.Millisecond) {
		if n.raft.State() == raft.Shutdown {
			n.log.Info("this node was removed from the cluster; stopping")
			n.announceLeaving()
			go n.Shutdown()
			return
		}
	}
}

// announceLeaving gossips that this node is leaving the cluster for good,
// so peers report it as left rather than failed once it is gone.
func (n *Node) announceLeaving() {
	n.gossip.markLeaving()
	if err := n.ml.UpdateNode(time.Second); err != nil {
		n.log.Warn("could not gossip the leaving flag", "err", err)
	}
}
