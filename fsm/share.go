package fsm

import (
	"slices"
	"strings"
)

// Delta Sharing shares. A share is a named, ordered list of Delta tables a
// provider exposes to recipients (recipient.go) under names of the form
// "schema.table", plus the recipients holding SELECT on it. Share names
// are case-insensitive: a share is keyed by its lower-cased name and
// keeps the spelling it was created with.
//
// A shared object remembers the uuid of the table it was added with, so
// a table dropped and re-created under the same name is not shared
// (SharedTable). Tables dropped or renamed stay in the share's list: the
// HTTP layer resolves them when it serves them.

// Share is a Delta Sharing share.
type Share struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Comment   *string `json:"comment,omitempty"`
	Owner     string  `json:"owner,omitempty"`
	CreatedAt int64   `json:"created_at"`
	CreatedBy string  `json:"created_by,omitempty"`
	UpdatedAt int64   `json:"updated_at"`
	UpdatedBy string  `json:"updated_by,omitempty"`
	// Objects are the shared tables in the order they were added.
	Objects []SharedObject `json:"objects,omitempty"`
	// Grants are the names of the recipients holding SELECT, sorted.
	Grants []string `json:"grants,omitempty"`
}

// SharedObject is one table of a share.
type SharedObject struct {
	// Name is the table's full name, "catalog.schema.table", as the
	// table spells it.
	Name string `json:"name"`
	// TableID is the table's uuid when it was added.
	TableID        string `json:"table_id"`
	DataObjectType string `json:"data_object_type"` // DataObjectTable
	// SharedAs is "schema.table" as recipients see it.
	SharedAs                 string  `json:"shared_as"`
	HistoryDataSharingStatus string  `json:"history_data_sharing_status"` // HistoryEnabled or HistoryDisabled
	StartVersion             int64   `json:"start_version,omitempty"`
	Comment                  *string `json:"comment,omitempty"`
	AddedAt                  int64   `json:"added_at"`
	AddedBy                  string  `json:"added_by,omitempty"`
}

// Values of the shared object fields and share update actions.
const (
	DataObjectTable   = "TABLE"
	HistoryEnabled    = "ENABLED"
	HistoryDisabled   = "DISABLED"
	ShareActionAdd    = "ADD"
	ShareActionRemove = "REMOVE"
	ShareActionUpdate = "UPDATE"
	// PrivilegeSelect is the one privilege a share grants.
	PrivilegeSelect = "SELECT"
)

// Schema is the part of SharedAs before the dot.
func (o *SharedObject) Schema() string {
	schema, _, _ := strings.Cut(o.SharedAs, ".")
	return schema
}

// Table is the part of SharedAs after the dot.
func (o *SharedObject) Table() string {
	_, table, _ := strings.Cut(o.SharedAs, ".")
	return table
}

// Command types of shares.
const (
	CmdCreateShare            CommandType = 24
	CmdUpdateShare            CommandType = 25
	CmdDeleteShare            CommandType = 26
	CmdUpdateSharePermissions CommandType = 27
)

// RecordShare is the record kind of a share.
const RecordShare byte = 7

var shareTree = newCountedTree("shares", "share") // lower-cased name -> *Share

func init() {
	registerCommand(CmdCreateShare, applyCreateShare)
	registerCommand(CmdUpdateShare, applyUpdateShare)
	registerCommand(CmdDeleteShare, applyDeleteShare)
	registerCommand(CmdUpdateSharePermissions, applyUpdateSharePermissions)
	registerRecord(RecordShare, treeRecord(shareTree, nil, func(b *Builder, s *Share) { b.t.putShare(s) }))
}

// CreateShare creates an empty share.
type CreateShare struct {
	Stamp
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	Comment *string `json:"comment,omitempty"`
}

// UpdateShare applies Updates to a share's objects in order, all or
// nothing, and sets its comment when Comment is given.
type UpdateShare struct {
	Stamp
	Name    string        `json:"name"`
	Comment *string       `json:"comment,omitempty"`
	Updates []ShareUpdate `json:"updates,omitempty"`
}

// ShareUpdate is one change to a share's objects. Action is ADD (Object
// names a Delta table, "catalog.schema.table"; the other fields default),
// REMOVE (Object.Name names the object, or when empty Object.SharedAs),
// or UPDATE (found like REMOVE; the comment, history status, start
// version and shared_as given, non-zero, replace the object's).
type ShareUpdate struct {
	Action string       `json:"action"`
	Object SharedObject `json:"object"`
}

// DeleteShare deletes a share.
type DeleteShare struct {
	Stamp
	Name string `json:"name"`
}

// UpdateSharePermissions grants and revokes SELECT on a share, in the
// order of Changes. Grantees are stored as their recipients spell their
// names. Changes that leave the grants as they were are a NoOp (the
// share's UpdatedAt stays).
type UpdateSharePermissions struct {
	Stamp
	Share   string             `json:"share"`
	Changes []PermissionChange `json:"changes,omitempty"`
}

// PermissionChange adds and then removes privileges (only SELECT) of one
// recipient.
type PermissionChange struct {
	Principal string   `json:"principal"`
	Add       []string `json:"add,omitempty"`
	Remove    []string `json:"remove,omitempty"`
}

func (*CreateShare) Type() CommandType            { return CmdCreateShare }
func (*UpdateShare) Type() CommandType            { return CmdUpdateShare }
func (*DeleteShare) Type() CommandType            { return CmdDeleteShare }
func (*UpdateSharePermissions) Type() CommandType { return CmdUpdateSharePermissions }

// SharingNameError refuses a name no share, recipient or part of a
// shared_as may have: empty, longer than 255 bytes, or holding a space,
// '/', '.', an ASCII control character or DEL. kind names the thing in
// the message.
func SharingNameError(kind, name string) *Error {
	if name == "" || len(name) > 255 {
		return Invalidf("Invalid %s name %q: it must have 1 to 255 characters", kind, name)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r == '/' || r == '.' || r == 0x7f }); i >= 0 {
		return Invalidf("Invalid %s name %q: it may not contain spaces, '/', '.' or control characters", kind, name)
	}
	return nil
}

// foldKey is the key of a case-insensitive name.
func foldKey(name string) []byte { return []byte(strings.ToLower(name)) }

// sameFold reports whether two names are equal case-insensitively, as
// foldKey compares them.
func sameFold(a, b string) bool { return strings.ToLower(a) == strings.ToLower(b) }

// Share returns a share by name, case-insensitively.
func (s *State) Share(name string) (*Share, bool) {
	return get[*Share](s.trees[shareTree], foldKey(name))
}

// Shares lists shares in order of their lower-cased names, starting after
// the name `after` (exclusive; "" for the start), at most limit (<=0: all).
func (s *State) Shares(after string, limit int) []*Share {
	var out []*Share
	walkAfter(s.trees[shareTree], nil, strings.ToLower(after), limit, func(v any) { out = append(out, v.(*Share)) })
	return out
}

// SharesGrantedTo lists the shares a recipient holds SELECT on, in the
// order of Shares.
func (s *State) SharesGrantedTo(recipient string) []*Share {
	var out []*Share
	s.trees[shareTree].Root().Walk(func(_ []byte, v any) bool {
		if sh := v.(*Share); sh.granted(recipient) >= 0 {
			out = append(out, sh)
		}
		return false
	})
	return out
}

// SharedTable returns the table a shared object names, if it is still the
// table that was added (same uuid) and still a shareable Delta table.
func (s *State) SharedTable(o *SharedObject) (*Table, bool) {
	parts := strings.Split(o.Name, ".")
	if len(parts) != 3 {
		return nil, false
	}
	tb, ok := s.Table(parts[0], parts[1], parts[2])
	if !ok || tb.ID != o.TableID || shareableError(tb) != nil {
		return nil, false
	}
	return tb, true
}

// SharedObject returns the object a share exposes as schema.table,
// case-insensitively.
func (s *Share) SharedObject(schema, table string) (*SharedObject, bool) {
	if i := s.objectIndex("", schema+"."+table); i >= 0 {
		return &s.Objects[i], true
	}
	return nil, false
}

// Schemas lists the schemas the share's objects are shared in, in order
// of their lower-cased names, each spelled as its first object spells it.
func (s *Share) Schemas() []string {
	var out []string
	for i := range s.Objects {
		name := s.Objects[i].Schema()
		if !slices.ContainsFunc(out, func(o string) bool { return sameFold(o, name) }) {
			out = append(out, name)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return out
}

// GrantedTo reports whether the recipient holds SELECT on the share.
func (s *Share) GrantedTo(recipient string) bool { return s.granted(recipient) >= 0 }

// granted is the index of a recipient in Grants, or -1.
func (s *Share) granted(recipient string) int {
	return slices.IndexFunc(s.Grants, func(g string) bool { return sameFold(g, recipient) })
}

// objectIndex finds an object by table name or, when name is empty, by
// shared_as (both case-insensitively): its index, or -1.
func (s *Share) objectIndex(name, sharedAs string) int {
	if name != "" {
		return slices.IndexFunc(s.Objects, func(o SharedObject) bool { return sameFold(o.Name, name) })
	}
	return slices.IndexFunc(s.Objects, func(o SharedObject) bool { return sameFold(o.SharedAs, sharedAs) })
}

// clone returns a copy whose objects and grants an applier may change.
func (s *Share) clone() *Share {
	c := *s
	c.Objects = slices.Clone(s.Objects)
	c.Grants = slices.Clone(s.Grants)
	return &c
}

func (t *tx) putShare(s *Share) { t.tree(shareTree).Insert(foldKey(s.Name), s) }

// resolveShare looks a share up with a 404.
func (t *tx) resolveShare(name string) (*Share, *Error) {
	s, ok := get[*Share](t.tree(shareTree), foldKey(name))
	if !ok {
		return nil, Errf(CodeShareNotFound, "Share not found: %s", name)
	}
	return s, nil
}

func applyCreateShare(t *tx, _ uint64, c *CreateShare) Result {
	if err := SharingNameError("share", c.Name); err != nil {
		return failed(err)
	}
	if existing, ok := t.tree(shareTree).Get(foldKey(c.Name)); ok {
		return failed(foldedTwinError(c.Rules, CodeShareExists, "Share", c.Name, existing.(*Share).Name))
	}
	s := &Share{ID: c.ID, Name: c.Name, Comment: clonePtr(c.Comment), Owner: c.Caller,
		CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time}
	t.putShare(s)
	return Result{Share: s}
}

func applyUpdateShare(t *tx, _ uint64, c *UpdateShare) Result {
	old, err := t.resolveShare(c.Name)
	if err != nil {
		return failed(err)
	}
	s := old.clone()
	for _, u := range c.Updates {
		if err := t.updateShareObjects(s, u, c.Stamp); err != nil {
			return failed(err)
		}
	}
	if c.Comment != nil {
		s.Comment = clonePtr(c.Comment)
	}
	s.UpdatedAt, s.UpdatedBy = max(c.Time, old.UpdatedAt), c.Caller
	t.putShare(s)
	return Result{Share: s}
}

func applyDeleteShare(t *tx, _ uint64, c *DeleteShare) Result {
	s, err := t.resolveShare(c.Name)
	if err != nil {
		return failed(err)
	}
	t.tree(shareTree).Delete(foldKey(s.Name))
	return Result{Share: s}
}

// updateShareObjects applies one update to s, a clone the applier owns.
func (t *tx) updateShareObjects(s *Share, u ShareUpdate, st Stamp) *Error {
	switch strings.ToUpper(u.Action) {
	case ShareActionAdd:
		return t.addSharedObject(s, u.Object, st)
	case ShareActionRemove:
		i, err := s.findObject(u.Object)
		if err != nil {
			return err
		}
		s.Objects = slices.Delete(s.Objects, i, i+1)
		return nil
	case ShareActionUpdate:
		return s.updateSharedObject(u.Object)
	}
	return Invalidf("Unknown share update action %q: use ADD, REMOVE or UPDATE", u.Action)
}

// findObject finds the object a REMOVE or UPDATE names.
func (s *Share) findObject(o SharedObject) (int, *Error) {
	if o.Name == "" && o.SharedAs == "" {
		return -1, Invalidf("A share update must name the object (name or shared_as)")
	}
	i := s.objectIndex(o.Name, o.SharedAs)
	if i < 0 {
		return -1, Errf(CodeTableNotFound, "Table %s is not in share %s", orElse(o.Name, o.SharedAs), s.Name)
	}
	return i, nil
}

// orElse is a unless it is empty, else b.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// shareableError refuses a table that is not a Delta table.
func shareableError(tb *Table) *Error {
	if tb.Format != FormatDelta || tb.IsView() {
		return Errf(CodeUnsupportedFormat, "Only Delta tables can be shared: %s is not one", tb.FullName())
	}
	return nil
}

// shareableTable resolves the "catalog.schema.table" an ADD names.
func (t *tx) shareableTable(name string) (*Table, *Error) {
	parts := strings.Split(name, ".")
	if len(parts) != 3 || slices.Contains(parts, "") {
		return nil, Invalidf("A shared table is named catalog.schema.table: %q", name)
	}
	tb, err := t.resolveTable(parts[0], parts[1], parts[2])
	if err != nil {
		return nil, err
	}
	return tb, shareableError(tb)
}

// addSharedObject adds the table o names to s, with o's settings.
func (t *tx) addSharedObject(s *Share, o SharedObject, st Stamp) *Error {
	tb, err := t.shareableTable(o.Name)
	if err != nil {
		return err
	}
	n := SharedObject{Name: tb.FullName(), TableID: tb.ID, DataObjectType: orElse(strings.ToUpper(o.DataObjectType), DataObjectTable),
		SharedAs: orElse(o.SharedAs, tb.SchemaName+"."+tb.Name), HistoryDataSharingStatus: orElse(strings.ToUpper(o.HistoryDataSharingStatus), HistoryDisabled),
		StartVersion: o.StartVersion, Comment: clonePtr(o.Comment), AddedAt: st.Time, AddedBy: st.Caller}
	if err := n.check(); err != nil {
		return err
	}
	if slices.ContainsFunc(s.Objects, func(x SharedObject) bool { return sameFold(x.Name, n.Name) || x.TableID == n.TableID }) {
		return Invalidf("Table %s is already in share %s", n.Name, s.Name)
	}
	if err := s.sharedAsFree(n.SharedAs, -1); err != nil {
		return err
	}
	s.Objects = append(s.Objects, n)
	return nil
}

// updateSharedObject replaces the settings o gives of the object it names.
func (s *Share) updateSharedObject(o SharedObject) *Error {
	i, err := s.findObject(o)
	if err != nil {
		return err
	}
	n := s.Objects[i]
	if o.Comment != nil {
		n.Comment = clonePtr(o.Comment)
	}
	if o.HistoryDataSharingStatus != "" {
		n.HistoryDataSharingStatus = strings.ToUpper(o.HistoryDataSharingStatus)
	}
	if o.StartVersion != 0 {
		n.StartVersion = o.StartVersion
	}
	if o.DataObjectType != "" {
		n.DataObjectType = strings.ToUpper(o.DataObjectType)
	}
	if o.Name != "" && o.SharedAs != "" {
		n.SharedAs = o.SharedAs
	}
	if err := n.check(); err != nil {
		return err
	}
	if err := s.sharedAsFree(n.SharedAs, i); err != nil {
		return err
	}
	s.Objects[i] = n
	return nil
}

// check refuses settings no shared object may have.
func (o *SharedObject) check() *Error {
	if o.DataObjectType != DataObjectTable {
		return Invalidf("Unsupported data object type %q: only TABLE can be shared", o.DataObjectType)
	}
	if o.HistoryDataSharingStatus != HistoryEnabled && o.HistoryDataSharingStatus != HistoryDisabled {
		return Invalidf("Invalid history_data_sharing_status %q: use ENABLED or DISABLED", o.HistoryDataSharingStatus)
	}
	if o.StartVersion < 0 {
		return Invalidf("Invalid start_version %d: it may not be negative", o.StartVersion)
	}
	schema, table, ok := strings.Cut(o.SharedAs, ".")
	if !ok {
		return Invalidf("Invalid shared_as %q: it must be schema.table", o.SharedAs)
	}
	if err := SharingNameError("shared schema", schema); err != nil {
		return err
	}
	return SharingNameError("shared table", table)
}

// sharedAsFree refuses a shared_as another object than the one at index
// self already has.
func (s *Share) sharedAsFree(sharedAs string, self int) *Error {
	for i := range s.Objects {
		if i != self && sameFold(s.Objects[i].SharedAs, sharedAs) {
			return Invalidf("%s is already in share %s (as the name of %s)", sharedAs, s.Name, s.Objects[i].Name)
		}
	}
	return nil
}

func applyUpdateSharePermissions(t *tx, _ uint64, c *UpdateSharePermissions) Result {
	old, err := t.resolveShare(c.Share)
	if err != nil {
		return failed(err)
	}
	grants := slices.Clone(old.Grants)
	for _, ch := range c.Changes {
		if grants, err = t.changeGrants(grants, ch); err != nil {
			return failed(err)
		}
	}
	if slices.Equal(grants, old.Grants) {
		return Result{Share: old, NoOp: true}
	}
	s := old.clone()
	s.Grants = grants
	s.UpdatedAt, s.UpdatedBy = max(c.Time, old.UpdatedAt), c.Caller
	t.putShare(s)
	return Result{Share: s}
}

// changeGrants applies one change to a sorted list of grantees.
func (t *tx) changeGrants(grants []string, ch PermissionChange) ([]string, *Error) {
	for _, p := range slices.Concat(ch.Add, ch.Remove) {
		if !strings.EqualFold(p, PrivilegeSelect) {
			return nil, Invalidf("Unsupported privilege %q: a share grants SELECT only", p)
		}
	}
	r, err := t.resolveRecipient(ch.Principal)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(grants, func(g string) bool { return sameFold(g, r.Name) })
	if len(ch.Add) > 0 && i < 0 {
		grants = append(grants, r.Name)
		slices.Sort(grants)
	}
	if len(ch.Remove) > 0 {
		grants = slices.DeleteFunc(grants, func(g string) bool { return sameFold(g, r.Name) })
	}
	return grants, nil
}

// revokeEverywhere removes a recipient from the grants of every share, in
// key order.
func (t *tx) revokeEverywhere(recipient string) {
	var changed []*Share
	t.tree(shareTree).Root().Walk(func(_ []byte, v any) bool {
		if s := v.(*Share); s.granted(recipient) >= 0 {
			changed = append(changed, s)
		}
		return false
	})
	for _, old := range changed {
		s := old.clone()
		s.Grants = slices.DeleteFunc(s.Grants, func(g string) bool { return sameFold(g, recipient) })
		t.putShare(s)
	}
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
