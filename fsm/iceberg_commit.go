package fsm

import (
	"slices"
	"strings"
)

// CmdCommitIcebergTables swaps the metadata pointers of Iceberg tables.
const CmdCommitIcebergTables CommandType = 16

func init() {
	registerCommand(CmdCommitIcebergTables, applyCommitIcebergTables)
	allowInTransaction(CmdCommitIcebergTables)
}

// CommitIcebergTables commits to one or more Iceberg tables atomically
// (Iceberg's commitTable and commitTransaction): each table's metadata
// pointer moves from BaseMetadataLocation, the metadata the HTTP layer
// applied the requirements and updates to, to MetadataLocation, the file
// it then wrote create-only. If any table is missing, is not Iceberg's or
// has moved on from its base, nothing changes: a lost race fails with
// CodeRequirementConflict (409 in every protocol), and the client
// retries from the new metadata.
//
// An entry applied before (every table's pointer already at its new
// location, the previous one at its base) is a replay and a NoOp.
type CommitIcebergTables struct {
	Stamp
	Tables []IcebergCommit `json:"tables"`
}

// IcebergCommit is one table's part of a commit. Properties and Location
// mirror the new metadata's when the commit changes them (nil or empty:
// unchanged).
type IcebergCommit struct {
	Namespace            []string           `json:"namespace"`
	Name                 string             `json:"name"`
	BaseMetadataLocation string             `json:"base_metadata_location"`
	MetadataLocation     string             `json:"metadata_location"`
	Properties           *map[string]string `json:"properties,omitempty"`
	Location             string             `json:"location,omitempty"` // normalised
}

func (*CommitIcebergTables) Type() CommandType { return CmdCommitIcebergTables }

func (c *IcebergCommit) ref() string {
	return strings.Join(append(slices.Clone(c.Namespace), c.Name), ".")
}

// check refuses what no state could accept: no tables, a table twice, a
// commit without a base or a new pointer, or one that does not move.
func (c *CommitIcebergTables) check() *Error {
	if len(c.Tables) == 0 {
		return Invalidf("A commit needs at least one table")
	}
	seen := make(map[string]bool, len(c.Tables))
	for i := range c.Tables {
		e := &c.Tables[i]
		if err := tableRefError(e.Namespace, e.Name); err != nil {
			return err
		}
		if e.BaseMetadataLocation == "" || e.MetadataLocation == "" || e.BaseMetadataLocation == e.MetadataLocation {
			return Invalidf("A commit to %s needs distinct base and new metadata locations", e.ref())
		}
		if key := string(tableKeyIn(e.Namespace, e.Name)); seen[key] {
			return Invalidf("A commit names table %s twice", e.ref())
		} else {
			seen[key] = true
		}
	}
	return nil
}

func applyCommitIcebergTables(t *tx, index uint64, c *CommitIcebergTables) Result {
	if err := c.check(); err != nil {
		return failed(err)
	}
	olds := make([]*Table, len(c.Tables))
	for i := range c.Tables {
		tb, err := t.resolveIceberg(c.Tables[i].Namespace, c.Tables[i].Name)
		if err != nil {
			return failed(err)
		}
		olds[i] = tb
	}
	if c.replayed(olds) {
		return Result{Tables: olds, NoOp: true}
	}
	out := make([]*Table, len(olds))
	for i, old := range olds {
		tb, err := t.commitIceberg(index, c, &c.Tables[i], old)
		if err != nil {
			return failed(err) // the transaction, with the tables before i, is discarded
		}
		out[i] = tb
	}
	res := Result{Tables: out}
	if len(out) == 1 {
		res.Table = out[0]
	}
	return res
}

// replayed reports whether every table already went from its base to its
// new pointer (so this very entry was applied).
func (c *CommitIcebergTables) replayed(olds []*Table) bool {
	for i, old := range olds {
		e := &c.Tables[i]
		if old.Iceberg.MetadataLocation != e.MetadataLocation || old.Iceberg.PreviousMetadataLocation != e.BaseMetadataLocation {
			return false
		}
	}
	return true
}

// commitIceberg swaps one table's pointer, if it is still at the base.
func (t *tx) commitIceberg(index uint64, c *CommitIcebergTables, e *IcebergCommit, old *Table) (*Table, *Error) {
	if cur := old.Iceberg.MetadataLocation; cur != e.BaseMetadataLocation {
		return nil, Errf(CodeRequirementConflict, "Commit failed for %s: base metadata location %s is not current (%s)",
			e.ref(), e.BaseMetadataLocation, cur)
	}
	tb := old.clone()
	tb.Iceberg = &IcebergState{MetadataLocation: e.MetadataLocation, PreviousMetadataLocation: e.BaseMetadataLocation,
		MetadataVersion: old.Iceberg.MetadataVersion + 1}
	if e.Properties != nil {
		tb.Properties = compactProperties(*e.Properties, tb.ID)
	}
	if err := t.moveLocation(c.Rules, tb, e.Location); err != nil {
		return nil, err
	}
	tb.UpdatedAt, tb.UpdatedBy, tb.MetaIndex = max(c.Time, old.UpdatedAt), c.Caller, index
	t.putTable(tb)
	return tb, nil
}

// moveLocation sets a table's new location (unless empty or unchanged),
// checking it as a new table's would be, the table itself aside.
func (t *tx) moveLocation(rules uint16, tb *Table, loc string) *Error {
	if loc == "" || loc == tb.Location {
		return nil
	}
	t.unindexTable(tb)
	if tb.Type == TableExternal {
		if err := t.checkOutsideManagedStorage(loc); err != nil {
			return err
		}
	}
	if err := t.checkNewLocation(rules, loc, tb.Type); err != nil {
		return err
	}
	tb.Location = loc
	return nil
}
