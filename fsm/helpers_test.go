package fsm_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

const (
	metastoreRoot = "s3://bucket/root"
	baseTime      = int64(1_700_000_000_000)
	owner         = "alice"
)

// env drives a Machine through the real apply path: every command is
// encoded, decoded and applied at the next raft index.
type env struct {
	t     testing.TB
	m     *fsm.Machine
	next  uint64
	clock int64
	ids   int
}

// newEnv returns a machine with Init applied (metastore storage root set).
func newEnv(t testing.TB) *env {
	return newEnvRoot(t, metastoreRoot)
}

func newEnvRoot(t testing.TB, root string) *env {
	t.Helper()
	e := &env{t: t, m: fsm.NewMachine(), next: 1, clock: baseTime}
	e.ok(&fsm.Init{Stamp: e.st(), MetastoreID: "ms-1", StorageRoot: root,
		CatalogID: "cat-unity", SchemaID: "sch-default"})
	return e
}

// st returns a stamp whose time advances by one second per call.
func (e *env) st() fsm.Stamp {
	e.clock += 1000
	return fsm.Stamp{Time: e.clock, Caller: owner}
}

func (e *env) newID(prefix string) string {
	e.ids++
	return fmt.Sprintf("%s-%04d", prefix, e.ids)
}

// lastIndex is the raft index of the most recently applied command.
func (e *env) lastIndex() uint64 { return e.next - 1 }

// apply encodes and applies one command, failing the test on a decode error.
func (e *env) apply(cmd fsm.Command) fsm.Result {
	e.t.Helper()
	b, err := fsm.Encode(cmd)
	if err != nil {
		e.t.Fatalf("encode %T: %v", cmd, err)
	}
	idx := e.next
	e.next++
	res, err := e.m.Apply(idx, b)
	if err != nil {
		e.t.Fatalf("apply %T at %d: %v", cmd, idx, err)
	}
	return res
}

// ok applies a command that must succeed (a NoOp counts as success).
func (e *env) ok(cmd fsm.Command) fsm.Result {
	e.t.Helper()
	res := e.apply(cmd)
	if res.Err != nil {
		e.t.Fatalf("%T: unexpected error %v: %s", cmd, res.Err.Code, res.Err.Message)
	}
	return res
}

// changed applies a command that must succeed and change the state.
func (e *env) changed(cmd fsm.Command) fsm.Result {
	e.t.Helper()
	before := e.m.State()
	res := e.ok(cmd)
	if res.NoOp {
		e.t.Fatalf("%T: unexpected NoOp", cmd)
	}
	if e.m.State() == before {
		e.t.Fatalf("%T: succeeded but the state pointer did not change", cmd)
	}
	return res
}

// noop applies a command that must be recognised as a no-op and must
// leave the state pointer untouched.
func (e *env) noop(cmd fsm.Command) fsm.Result {
	e.t.Helper()
	before := e.m.State()
	res := e.ok(cmd)
	if !res.NoOp {
		e.t.Fatalf("%T: expected NoOp, got %+v", cmd, res)
	}
	if e.m.State() != before {
		e.t.Fatalf("%T: NoOp replaced the state", cmd)
	}
	return res
}

// fail applies a command that must be rejected with code and a message
// containing substr, and checks that the state pointer did not move.
func (e *env) fail(cmd fsm.Command, code fsm.Code, substr string) *fsm.Error {
	e.t.Helper()
	before := e.m.State()
	res := e.apply(cmd)
	if res.Err == nil {
		e.t.Fatalf("%T: expected %v %q, got success (NoOp=%v)", cmd, code, substr, res.NoOp)
	}
	if res.Err.Code != code {
		e.t.Fatalf("%T: code = %v (%s), want %v", cmd, res.Err.Code, res.Err.Message, code)
	}
	if !strings.Contains(res.Err.Message, substr) {
		e.t.Fatalf("%T: message %q does not contain %q", cmd, res.Err.Message, substr)
	}
	if res.NoOp || res.Table != nil || res.Catalog != nil || res.Schema != nil || res.Staging != nil {
		e.t.Fatalf("%T: rejected result carries entities: %+v", cmd, res)
	}
	if e.m.State() != before {
		e.t.Fatalf("%T: rejected command replaced the state", cmd)
	}
	return res.Err
}

func (e *env) table(cat, sch, name string) *fsm.Table {
	e.t.Helper()
	tb, ok := e.m.State().Table(cat, sch, name)
	if !ok {
		e.t.Fatalf("table %s.%s.%s not found", cat, sch, name)
	}
	return tb
}

// reload returns the current version of a table.
func (e *env) reload(tb *fsm.Table) *fsm.Table {
	e.t.Helper()
	return e.table(tb.CatalogName, tb.SchemaName, tb.Name)
}

func (e *env) createCatalog(name, root string) *fsm.Catalog {
	e.t.Helper()
	return e.changed(&fsm.CreateCatalog{Stamp: e.st(), ID: e.newID("cat"), Name: name, StorageRoot: root}).Catalog
}

func (e *env) createSchema(cat, name, root string) *fsm.Schema {
	e.t.Helper()
	return e.changed(&fsm.CreateSchema{Stamp: e.st(), ID: e.newID("sch"), CatalogName: cat, Name: name, StorageRoot: root}).Schema
}

func (e *env) stage(cat, sch, name string) *fsm.StagingTable {
	e.t.Helper()
	return e.changed(&fsm.CreateStagingTable{Stamp: e.st(), ID: e.newID("tbl"), CatalogName: cat, SchemaName: sch, Name: name}).Staging
}

func ptr[T any](v T) *T { return &v }

// testColumns is the simple schema (id long not null, amount double).
func testColumns() fsm.ColumnsSpec {
	return fsm.ColumnsSpec{
		Columns: json.RawMessage(`{"type":"struct","fields":[` +
			`{"name":"id","type":"long","nullable":false,"metadata":{}},` +
			`{"name":"amount","type":"double","nullable":true,"metadata":{}}]}`),
		Names: []string{"id", "amount"},
	}
}

// managedProtocol is the required managed protocol plus extra writer
// features (each extra also becomes a reader feature when reader is true).
func managedProtocol(extraWriter ...string) fsm.Protocol {
	return fsm.Protocol{
		MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: slices.Clone(fsm.ManagedReaderFeatures),
		WriterFeatures: append(slices.Clone(fsm.ManagedWriterFeatures), extraWriter...),
	}
}

// managedProps is the full set of required managed properties for id.
func managedProps(id string) map[string]string {
	p := map[string]string{fsm.PropTableID: id}
	for _, kv := range fsm.ManagedProperties {
		p[kv[0]] = kv[1]
	}
	return p
}

// managedCreate is a valid MANAGED create for a staging row: the managed
// contract, rowTracking with high-water mark 99.
func (e *env) managedCreate(st *fsm.StagingTable, name string) *fsm.CreateTable {
	c := &fsm.CreateTable{
		Stamp: e.st(), CatalogName: st.CatalogName, SchemaName: st.SchemaName, Name: name,
		Format: fsm.FormatDelta, TableType: fsm.TableManaged, Location: st.Location,
		Columns:               testColumns(),
		Protocol:              managedProtocol("domainMetadata", "rowTracking"),
		Properties:            managedProps(st.ID),
		DomainMetadata:        &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(99))},
		LastCommitTimestampMs: baseTime - 5,
	}
	if err := fsm.CheckManagedContract(c.Protocol, c.Properties, nil, false, true); err != nil {
		e.t.Fatalf("fixture violates the managed contract: %s", err.Message)
	}
	return c
}

// createManaged stages and creates a MANAGED table with the full contract.
func (e *env) createManaged(cat, sch, name string) *fsm.Table {
	e.t.Helper()
	st := e.stage(cat, sch, name)
	tb := e.changed(e.managedCreate(st, name)).Table
	if tb.ID != st.ID {
		e.t.Fatalf("managed table id %s, staging id %s", tb.ID, st.ID)
	}
	return tb
}

func (e *env) externalCreate(cat, sch, name string) *fsm.CreateTable {
	return &fsm.CreateTable{
		Stamp: e.st(), ID: e.newID("ext"), CatalogName: cat, SchemaName: sch, Name: name,
		Format: fsm.FormatDelta, TableType: fsm.TableExternal,
		Location: "s3://ext/" + cat + "/" + sch + "/" + name,
		Columns:  testColumns(), Protocol: fsm.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
		Properties:            map[string]string{"owner.team": "data"},
		LastCommitTimestampMs: baseTime - 7,
	}
}

func (e *env) createExternal(cat, sch, name string) *fsm.Table {
	e.t.Helper()
	return e.changed(e.externalCreate(cat, sch, name)).Table
}

// upd builds an UpdateTable for tb carrying assert-table-uuid.
func (e *env) upd(tb *fsm.Table, f func(*fsm.UpdateTable)) *fsm.UpdateTable {
	c := &fsm.UpdateTable{Stamp: e.st(), CatalogName: tb.CatalogName, SchemaName: tb.SchemaName,
		Name: tb.Name, AssertUUID: tb.ID}
	if f != nil {
		f(c)
	}
	return c
}

// commitFile is the staged commit file name of version v in variant tag.
func commitFile(v int64, tag string) string {
	return fmt.Sprintf("%020d.%s.json", v, tag)
}

func commitOf(v int64, tag string) fsm.Commit {
	return fsm.Commit{Version: v, Timestamp: baseTime + v*10, FileName: commitFile(v, tag),
		FileSize: 1000 + v, FileModTime: baseTime + v*10 + 1}
}

// addCommit is an update carrying only add-commit of version v.
func (e *env) addCommit(tb *fsm.Table, v int64) *fsm.UpdateTable {
	return e.upd(tb, func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(v, "a")} })
}

// commitThrough ratifies versions from..to (file tag "a").
func (e *env) commitThrough(tb *fsm.Table, from, to int64) {
	e.t.Helper()
	for v := from; v <= to; v++ {
		e.changed(e.addCommit(tb, v))
	}
}

func (e *env) backfill(tb *fsm.Table, b int64) *fsm.UpdateTable {
	return e.upd(tb, func(c *fsm.UpdateTable) { c.SetLatestBackfilled = ptr(b) })
}

// versions lists the unbackfilled versions, newest first.
func versions(tb *fsm.Table) []int64 {
	out := []int64{}
	for _, c := range tb.UnbackfilledCommits() {
		out = append(out, c.Version)
	}
	return out
}

func wantVersions(t testing.TB, tb *fsm.Table, want ...int64) {
	t.Helper()
	if want == nil {
		want = []int64{}
	}
	if got := versions(tb); !slices.Equal(got, want) {
		t.Fatalf("unbackfilled versions = %v, want %v", got, want)
	}
}

// featureKeys returns the delta.feature.* keys of props, sorted.
func featureKeys(props map[string]string) []string {
	var out []string
	for k := range props {
		if strings.HasPrefix(k, fsm.PropFeaturePrefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// featureKeysOf is the sorted delta.feature.* key set a protocol derives.
func featureKeysOf(p fsm.Protocol) []string {
	set := map[string]bool{}
	for _, f := range p.ReaderFeatures {
		set[fsm.PropFeaturePrefix+f] = true
	}
	for _, f := range p.WriterFeatures {
		set[fsm.PropFeaturePrefix+f] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// jsonOf marshals v for deep comparisons of stored entities.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}
