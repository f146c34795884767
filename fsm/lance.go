package fsm

import (
	"maps"
	"slices"
)

// Command types of Lance tables (Lance Namespace REST).
const (
	CmdDeclareLanceTable   CommandType = 33
	CmdCreateLanceVersion  CommandType = 34
	CmdDeleteLanceVersions CommandType = 35
	CmdDropLanceTable      CommandType = 36
	CmdRenameLanceTable    CommandType = 37
)

func init() {
	registerCommand(CmdDeclareLanceTable, applyDeclareLanceTable)
	registerCommand(CmdCreateLanceVersion, applyCreateLanceVersion)
	registerCommand(CmdDeleteLanceVersions, applyDeleteLanceVersions)
	registerCommand(CmdDropLanceTable, applyDropLanceTable)
	registerCommand(CmdRenameLanceTable, applyRenameLanceTable)
	allowInTransaction(CmdDeclareLanceTable, CmdCreateLanceVersion, CmdDeleteLanceVersions, CmdDropLanceTable)
}

// DeclareLanceTable adds a Lance table to a namespace: declared (no data
// yet, OnlyDeclared until its first version) or registered (Registered:
// a dataset that already exists at Location). ID is the new table uuid.
type DeclareLanceTable struct {
	Stamp
	ID        string   `json:"id"`
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
	// TableType is MANAGED (a location the catalog chose below a managed
	// storage root) or EXTERNAL (a location the client gave).
	TableType  string            `json:"table_type"`
	Location   string            `json:"location"` // normalised
	Properties map[string]string `json:"properties,omitempty"`
	Registered bool              `json:"registered,omitempty"`
}

// CreateLanceVersion records a new version of a Lance table whose final
// manifest the HTTP layer has written, create-only, at ManifestPath.
// TableID pins the table the manifest was written for: a table dropped
// and declared again under the same name meanwhile is another table.
type CreateLanceVersion struct {
	Stamp
	Namespace []string     `json:"namespace"`
	Name      string       `json:"name"`
	TableID   string       `json:"table_id"`
	Version   LanceVersion `json:"version"` // TableID and TimestampMillis are the command's
}

// VersionRange is a range of Lance versions: Start inclusive, End
// exclusive, End -1 through the latest.
type VersionRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// DeleteLanceVersions forgets the version records in the ranges (the
// manifest files stay: they are the client's to clean up).
type DeleteLanceVersions struct {
	Stamp
	Namespace []string       `json:"namespace"`
	Name      string         `json:"name"`
	Ranges    []VersionRange `json:"ranges"`
}

// DropLanceTable removes a Lance table and its version records from the
// catalog (Lance's deregister and drop; deleting the data is the HTTP
// layer's business, after the drop applied).
type DropLanceTable struct {
	Stamp
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// RenameLanceTable renames a Lance table and may move it to another
// namespace of the same catalog. Its location does not change.
type RenameLanceTable struct {
	Stamp
	Namespace    []string `json:"namespace"`
	Name         string   `json:"name"`
	NewNamespace []string `json:"new_namespace"`
	NewName      string   `json:"new_name"`
}

func (*DeclareLanceTable) Type() CommandType   { return CmdDeclareLanceTable }
func (*CreateLanceVersion) Type() CommandType  { return CmdCreateLanceVersion }
func (*DeleteLanceVersions) Type() CommandType { return CmdDeleteLanceVersions }
func (*DropLanceTable) Type() CommandType      { return CmdDropLanceTable }
func (*RenameLanceTable) Type() CommandType    { return CmdRenameLanceTable }

// LanceResult is what a Lance version command did.
type LanceResult struct {
	Version *LanceVersion // the version created (or found, on a replay)
	Deleted int64         // how many versions a delete removed
}

func (c *DeclareLanceTable) check() *Error {
	if err := tableRefError(c.Namespace, c.Name); err != nil {
		return err
	}
	if c.ID == "" || c.Location == "" {
		return Invalidf("A Lance table needs a uuid and a location: %s", c.Name)
	}
	if tt := canonEnum(c.TableType); tt != TableManaged && tt != TableExternal {
		return Invalidf("Unknown table type: %s", c.TableType)
	}
	return nil
}

func applyDeclareLanceTable(t *tx, index uint64, c *DeclareLanceTable) Result {
	if err := c.check(); err != nil {
		return failed(err)
	}
	if err := t.namespaceExists(c.Namespace); err != nil {
		return failed(err)
	}
	if err := t.nameFree(c.Rules, c.Namespace, c.Name, ""); err != nil {
		return failed(err)
	}
	tt := canonEnum(c.TableType)
	if tt == TableExternal {
		if err := t.checkOutsideManagedStorage(c.Location); err != nil {
			return failed(err)
		}
	}
	if err := t.checkNewLocation(c.Rules, c.Location, tt); err != nil {
		return failed(err)
	}
	tb := &Table{ID: c.ID, Name: c.Name, Format: FormatLance, Type: tt, Location: c.Location,
		Properties: compactProperties(c.Properties, c.ID), Lance: &LanceState{OnlyDeclared: !c.Registered},
		Owner: c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time, MetaIndex: index}
	t.placeIn(tb, c.Namespace)
	t.putTable(tb)
	return Result{Table: tb}
}

func (c *CreateLanceVersion) check() *Error {
	if err := tableRefError(c.Namespace, c.Name); err != nil {
		return err
	}
	if c.Version.Version < 0 || c.Version.ManifestPath == "" || c.Version.ManifestSize < 0 {
		return Invalidf("A Lance version needs a version >= 0, a manifest path and a size >= 0")
	}
	return nil
}

func applyCreateLanceVersion(t *tx, _ uint64, c *CreateLanceVersion) Result {
	if err := c.check(); err != nil {
		return failed(err)
	}
	tb, err := t.resolveLance(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	if c.TableID != tb.ID {
		return failed(Errf(CodeRequirementConflict, "Table %s was replaced while version %d was being committed",
			tb.FullName(), c.Version.Version))
	}
	if old, ok := t.lanceVersion(tb.ID, c.Version.Version); ok {
		if old.Source != "" && old.Source == c.Version.Source && old.ManifestPath == c.Version.ManifestPath {
			return Result{Table: tb, Lance: &LanceResult{Version: old}, NoOp: true}
		}
		return failed(Errf(CodeCommitVersionConflict, "Version %d of table %s already exists", c.Version.Version, tb.FullName()))
	}
	v := c.Version
	v.TableID, v.TimestampMillis, v.Metadata = tb.ID, c.Time, maps.Clone(c.Version.Metadata)
	t.tree(lanceVersionTree).Insert(lanceVersionKey(tb.ID, v.Version), &v)
	nt := tb.clone()
	nt.Lance = &LanceState{Count: tb.Lance.Count + 1, Latest: v.Version}
	if tb.Lance.Count > 0 {
		nt.Lance.Latest = max(v.Version, tb.Lance.Latest)
	}
	t.putTable(nt)
	return Result{Table: nt, Lance: &LanceResult{Version: &v}}
}

func applyDeleteLanceVersions(t *tx, _ uint64, c *DeleteLanceVersions) Result {
	tb, err := t.resolveLance(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	for _, r := range c.Ranges {
		if r.Start < 0 || (r.End != -1 && r.End < r.Start) {
			return failed(Invalidf("Invalid version range [%d, %d)", r.Start, r.End))
		}
	}
	var n int64
	tree := t.tree(lanceVersionTree)
	for _, r := range c.Ranges {
		for _, k := range keysWithPrefix(tree, lanceVersionPrefix(tb.ID)) {
			v, _ := get[*LanceVersion](tree, k)
			if v.Version >= r.Start && (r.End == -1 || v.Version < r.End) {
				tree.Delete(k)
				n++
			}
		}
	}
	if n == 0 {
		return Result{Table: tb, Lance: &LanceResult{}, NoOp: true}
	}
	nt := tb.clone()
	nt.Lance = &LanceState{Count: tb.Lance.Count - n}
	nt.Lance.Latest, _ = t.latestLanceVersion(tb.ID)
	t.putTable(nt)
	return Result{Table: nt, Lance: &LanceResult{Deleted: n}}
}

func applyDropLanceTable(t *tx, _ uint64, c *DropLanceTable) Result {
	tb, err := t.resolveLance(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	t.removeTable(tb)
	return Result{Table: tb}
}

func applyRenameLanceTable(t *tx, index uint64, c *RenameLanceTable) Result {
	old, err := t.resolveLance(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	return t.moveTable(index, c.Stamp, old, c.Namespace, slices.Clone(c.NewNamespace), c.NewName)
}
