package fsm

import "fmt"

// Rules levels. A command carries the level of validation it is applied
// under (Stamp.Rules), decided by the leader before proposing: an entry
// applies by the rules it was proposed with, so entries written before a
// rule existed keep applying as they did, and a leader stamps a level only
// once every replica knows it. Append only.
const (
	// RulesOriginal: entries written before rules were versioned.
	RulesOriginal uint16 = 0
	// RulesLocations: a table's location may not equal, contain or lie
	// inside another table's, and a catalog or schema storage root may not
	// lie inside a table.
	RulesLocations uint16 = 1
	// RulesAuth: replicas know principals, API tokens, grants and token
	// signing keys (command types 39 to 44); those are proposed only
	// from this level on.
	RulesAuth uint16 = 2
	// RulesGossipKeys: replicas know the gossip keyring (command type
	// 45), proposed only from this level on.
	RulesGossipKeys uint16 = 3
	// RulesCaseNames: a created or renamed catalog, schema, namespace,
	// table or view may not differ only in case from a sibling's
	// (casefold.go).
	RulesCaseNames uint16 = 4

	// CurrentRules is the highest level this build applies.
	CurrentRules = RulesCaseNames
)

// RulesNeeded is the least level every replica must know before a
// command of type ct may be proposed: an older replica would not know
// how to apply it and would halt.
func RulesNeeded(ct CommandType) uint16 {
	switch {
	case ct == CmdChangeGossipKey:
		return RulesGossipKeys
	case ct >= CmdCreatePrincipal && ct <= CmdSetAuthSigningKey:
		return RulesAuth
	}
	return RulesOriginal
}

// RulesLevel is the validation level a command was proposed under.
func (s *Stamp) RulesLevel() uint16 { return s.Rules }

// checkRules refuses a command proposed under rules this build does not
// know: applying it by older rules would diverge from the replicas that
// know them, so the node must halt (and be upgraded) instead.
func checkRules(cmd Command) error {
	r, ok := cmd.(interface{ RulesLevel() uint16 })
	if !ok || r.RulesLevel() <= CurrentRules {
		return nil
	}
	return fmt.Errorf("command type %d was proposed under validation rules level %d; this release applies up to %d: upgrade this node",
		cmd.Type(), r.RulesLevel(), CurrentRules)
}
