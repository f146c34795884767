package fsm

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

	// CurrentRules is the highest level this build applies.
	CurrentRules = RulesLocations
)
