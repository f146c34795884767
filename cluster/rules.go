package cluster

import "github.com/raftcat/raftcat/fsm"

// Rules is the level of validation rules (fsm.Rules*) this leader may
// stamp on the commands it proposes: the lowest level any server in the
// raft configuration gossips (voters or not: all apply the log), and
// none while one is not yet known. A
// command's rules decide how it applies, so an older replica that does
// not know a level never sees an entry that it would apply differently;
// a cluster takes up new rules once its last node runs the new release.
func (n *Node) Rules() uint16 {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return fsm.RulesOriginal
	}
	level := fsm.CurrentRules
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == n.cfg.NodeID {
			continue
		}
		m, ok := n.gossip.get(string(s.ID))
		if !ok {
			return fsm.RulesOriginal
		}
		level = min(level, m.meta.Rules)
	}
	return level
}

// stampRules records the rules a command is proposed under.
func (n *Node) stampRules(cmd fsm.Command) {
	if r, ok := cmd.(interface{ SetRules(uint16) }); ok {
		r.SetRules(n.Rules())
	}
}
