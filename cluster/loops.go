package cluster

import (
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/fsm"
)

// joinLoop joins gossip: the --join addresses plus every peer this node
// knew when it last ran (a restarted node must find its cluster even when
// --join names only itself). It retries until another node answers. Then
// it keeps the known peers on disk for the next start, and joins again
// whenever a server of the raft configuration is missing from gossip.
func (n *Node) joinLoop() {
	peers := mergePeers(n.cfg.Join, loadPeers(n.cfg.DataDir))
	for attempt := 0; len(peers) > 0 && n.ml.NumMembers() < 2; attempt++ {
		contacted, err := n.ml.Join(peers)
		if n.ml.NumMembers() > 1 {
			n.log.Info("joined gossip", "peers_contacted", contacted, "members", n.ml.NumMembers())
			break
		}
		if attempt%10 == 0 {
			n.log.Warn("no other gossip peer answered yet; retrying", "peers", peers, "err", err)
		}
		if !n.sleep(time.Second) {
			return
		}
	}
	saved := ""
	for {
		if cur := n.gossip.peerAddrs(n.cfg.NodeID); len(cur) > 0 && strings.Join(cur, ",") != saved {
			if err := savePeers(n.cfg.DataDir, cur); err != nil {
				n.log.Warn("could not save gossip peers", "err", err)
			} else {
				saved = strings.Join(cur, ",")
				peers = mergePeers(peers, cur)
			}
		}
		if n.missingFromGossip() && len(peers) > 0 {
			_, _ = n.ml.Join(peers)
		}
		if !n.sleep(2 * time.Second) {
			return
		}
	}
}

// missingFromGossip reports whether a server of the raft configuration is
// not alive in this node's gossip view (so its HTTP address is unknown).
func (n *Node) missingFromGossip() bool {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == n.cfg.NodeID {
			continue
		}
		if m, ok := n.gossip.get(string(s.ID)); !ok || m.status != StatusAlive {
			return true
		}
	}
	return false
}

// bootstrapLoop bootstraps a brand-new cluster exactly once: when this node
// has no raft state and sees bootstrap-expect alive nodes that all expect
// the same number. Every node computes the same server set, so it does not
// matter which of them bootstraps first.
func (n *Node) bootstrapLoop() {
	has, err := raft.HasExistingState(n.logs, n.stable, n.snaps)
	if err != nil {
		n.log.Error("cannot read raft state", "err", err)
		return
	}
	if has {
		n.announceBootstrapped()
		return
	}
	for {
		if n.raft.Leader() != "" || n.raft.LastIndex() > 0 || n.peerBootstrapped() {
			n.log.Info("joining an existing cluster; waiting for its leader to add this node")
			n.announceBootstrapped()
			return
		}
		if servers, ok := n.expectedServers(); ok {
			f := n.raft.BootstrapCluster(raft.Configuration{Servers: servers})
			if err := f.Error(); err != nil && err != raft.ErrCantBootstrap {
				n.log.Error("bootstrap failed", "err", err)
			} else if err == nil {
				n.log.Info("bootstrapped cluster", "servers", len(servers))
			}
			n.announceBootstrapped()
			return
		}
		select {
		case <-n.gossip.changed:
		case <-time.After(time.Second):
		case <-n.stop:
			return
		}
	}
}

// announceBootstrapped gossips that this node is part of a formed cluster.
func (n *Node) announceBootstrapped() {
	if n.gossip.markBootstrapped() {
		if err := n.ml.UpdateNode(5 * time.Second); err != nil {
			n.log.Warn("could not gossip updated metadata", "err", err)
		}
	}
}

// peerBootstrapped reports whether an alive peer already belongs to a cluster.
func (n *Node) peerBootstrapped() bool {
	for _, m := range n.gossip.members() {
		if m.status == StatusAlive && m.meta.Bootstrapped && m.meta.ID != n.cfg.NodeID {
			return true
		}
	}
	return false
}

func (n *Node) expectedServers() ([]raft.Server, bool) {
	var servers []raft.Server
	for _, m := range n.gossip.members() {
		if m.status != StatusAlive {
			continue
		}
		if m.meta.BootstrapExpect != n.cfg.BootstrapExpect {
			n.log.Warn("peer expects a different cluster size; not bootstrapping with it",
				"peer", m.meta.ID, "peer_expect", m.meta.BootstrapExpect, "expect", n.cfg.BootstrapExpect)
			continue
		}
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.meta.ID), Address: raft.ServerAddress(m.meta.RaftAddr)})
	}
	return servers, len(servers) >= n.cfg.BootstrapExpect
}

// leaderLoop runs this node's leader duties while it leads: establish the
// term (apply an entry of its own, seeding a new cluster), then keep the
// raft configuration in step with gossip.
func (n *Node) leaderLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-n.raft.LeaderCh():
		case <-n.gossip.changed:
		case <-tick.C:
		}
		leader := n.raft.State() == raft.Leader
		n.pilot.follow(leader)
		if _, halted := n.fsm.Halted(); !leader || halted {
			continue
		}
		if term := n.raft.CurrentTerm(); n.readyTerm.Load() != term {
			n.establish(term)
		}
		n.reconcile()
	}
}

// establish applies an Init command as this term's first entry of our own.
// On a new cluster it seeds the catalog; afterwards it is a no-op whose
// application proves the state holds everything committed before the
// term began, which linearizable reads rely on.
func (n *Node) establish(term uint64) {
	init := &fsm.Init{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()}, MetastoreID: uuid.NewString(),
		StorageRoot: n.cfg.StorageRoot, CatalogID: uuid.NewString(), SchemaID: uuid.NewString()}
	res, _, err := n.propose(init)
	if err != nil {
		n.log.Warn("leader could not establish its term", "term", term, "err", err)
		return
	}
	if !res.NoOp {
		n.log.Info("initialised new cluster", "catalog", fsm.DefaultCatalog, "schema", fsm.DefaultSchema,
			"storage_root", n.cfg.StorageRoot)
	}
	n.readyTerm.Store(term)
	n.log.Info("leader ready", "term", term)
}

// admitRetry is how long a member whose cluster port failed admission
// is left alone before the leader tries it again (and logs again).
const admitRetry = 30 * time.Second

// admitVoter reports whether gossip member m may become a voter: with
// TLS, its cluster port must first prove it holds a node certificate of
// the cluster CA (gossip alone does not prove it). Only the leader loop
// calls it.
func (n *Node) admitVoter(m member) bool {
	if until, ok := n.notAdmitted[m.meta.ID]; ok && time.Now().Before(until) {
		return false
	}
	if err := n.port.admit(m.meta.RaftAddr); err != nil {
		if n.notAdmitted == nil {
			n.notAdmitted = map[string]time.Time{}
		}
		n.notAdmitted[m.meta.ID] = time.Now().Add(admitRetry)
		n.log.Warn("not adding a voter whose cluster port does not prove it is a node of this cluster",
			"node", m.meta.ID, "raft_addr", m.meta.RaftAddr, "err", err, "retry_in", admitRetry)
		return false
	}
	delete(n.notAdmitted, m.meta.ID)
	return true
}

// reconcile adds every alive gossip member that is not yet in the raft
// configuration as a voter. Failed members are left alone: they may only
// be paused, and removing them would shrink the quorum.
func (n *Node) reconcile() {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return
	}
	known := map[raft.ServerID]raft.ServerAddress{}
	for _, s := range cf.Configuration().Servers {
		known[s.ID] = s.Address
	}
	for _, m := range n.gossip.members() {
		id := raft.ServerID(m.meta.ID)
		if m.status != StatusAlive || n.wasRemoved(m.meta.Boot) {
			continue
		}
		if addr, ok := known[id]; ok && addr == raft.ServerAddress(m.meta.RaftAddr) {
			continue
		}
		if !n.admitVoter(m) {
			continue
		}
		err := n.raft.AddVoter(id, raft.ServerAddress(m.meta.RaftAddr), 0, 10*time.Second).Error()
		if err != nil {
			n.log.Warn("could not add voter", "node", m.meta.ID, "err", err)
			continue
		}
		n.log.Info("added voter", "node", m.meta.ID, "raft_addr", m.meta.RaftAddr)
	}
}
