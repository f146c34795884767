package fsm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// lanceCmd emits one Lance command: declares (some over a taken name or
// an overlapping location), versions (mostly the next one, some replayed,
// some conflicting, some for a table replaced meanwhile), range deletes,
// drops, renames and transactions. A steady share of commands is refused.
func (g *logGen) lanceCmd() {
	ts := g.lanceTables()
	switch r := g.lpick(100); {
	case r < 18 || len(ts) == 0:
		g.lemit(g.lanceDeclare())
	case r < 46:
		g.lemit(g.lanceVersion(ts[g.lpick(len(ts))]))
	case r < 57:
		g.lemit(g.lanceDelete(ts[g.lpick(len(ts))]))
	case r < 63:
		g.lemit(g.lanceDrop(ts[g.lpick(len(ts))]))
	case r < 70:
		g.lemit(g.lanceRename(ts[g.lpick(len(ts))]))
	case r < 74:
		g.lanceReplace(ts[g.lpick(len(ts))])
	case r < 76:
		g.lanceBadTransaction()
	default:
		g.lanceTransaction(ts)
	}
}

// The Lance generator draws from lrng only, so that the commands the
// other generators draw stay what they were.

func (g *logGen) lpick(n int) int { return g.lrng.IntN(n) }

func (g *logGen) lchance(pct int) bool { return g.lrng.IntN(100) < pct }

func (g *logGen) lname(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, g.lpick(n)) }

// lstamp is stamp drawn from lrng.
func (g *logGen) lstamp() fsm.Stamp {
	g.clock += int64(g.lpick(2000)) - 200
	st := fsm.Stamp{Time: g.clock, Caller: owner}
	if g.rules {
		st.Rules = fsm.CurrentRules
	}
	return st
}

// lemit emits a Lance command or a transaction.
func (g *logGen) lemit(cmd fsm.Command) {
	g.lanceEntries++
	g.emit(cmd)
}

func isLance(tb *fsm.Table) bool { return tb.Format == fsm.FormatLance }

// lanceTables lists the Lance tables where icebergTables looks for tables.
func (g *logGen) lanceTables() []*fsm.Table { return g.icebergKind(isLance) }

// notLance is a table of a schema that is not Lance's, or nil.
func (g *logGen) notLance() *fsm.Table {
	ts := slices.DeleteFunc(g.tables(), isLance)
	if len(ts) == 0 {
		return nil
	}
	return ts[g.lpick(len(ts))]
}

// lanceNamespace is a schema or a namespace one level below one, now and
// then a missing one.
func (g *logGen) lanceNamespace() []string {
	st := g.driver.State()
	ss := g.schemas()
	if len(ss) == 0 || g.lchance(6) {
		return []string{g.lname("c", 5), g.lname("s", 4), g.lname("n", 3)}
	}
	s := ss[g.lpick(len(ss))]
	path := []string{s.CatalogName, s.Name}
	if ns := st.Namespaces(path, "", 0); len(ns) > 0 && g.lchance(40) {
		return slices.Clone(ns[g.lpick(len(ns))].Path)
	}
	return path
}

// lanceName is mostly a name of Lance's own, sometimes one Delta or
// Iceberg tables use too.
func (g *logGen) lanceName() string {
	switch r := g.lpick(100); {
	case r < 10:
		return g.lname("t", 7)
	case r < 15:
		return g.lname("i", 7)
	}
	return g.lname("l", 8)
}

// lanceLocation is mostly a location of its own, sometimes one another
// table has or one inside another's, one over managed storage, or a table
// type that does not exist.
func (g *logGen) lanceLocation() (tableType, loc string) {
	switch r := g.lpick(100); {
	case r < 40:
		return fsm.TableExternal, "s3://lance/" + g.id("d") + ".lance"
	case r < 58:
		return fsm.TableExternal, "s3://lance/" + g.lname("d", 8) + ".lance"
	case r < 64:
		return fsm.TableExternal, "s3://lance/" + g.lname("d", 8) + ".lance/inner"
	case r < 68:
		return fsm.TableExternal, "s3://ice/" + g.lname("l", 12)
	case r < 70:
		return fsm.TableExternal, metastoreRoot
	case r < 72:
		return "external", "s3://cat-root"
	case r < 74:
		return "VIRTUAL", "s3://lance/" + g.id("d")
	}
	return fsm.TableManaged, metastoreRoot + "/__unitystorage/lance/" + g.id("d")
}

// lanceDeclare declares or registers a Lance table.
func (g *logGen) lanceDeclare() *fsm.DeclareLanceTable {
	tt, loc := g.lanceLocation()
	c := &fsm.DeclareLanceTable{Stamp: g.lstamp(), ID: g.id("lance"), Namespace: g.lanceNamespace(), Name: g.lanceName(),
		TableType: tt, Location: loc, Registered: g.lchance(25)}
	if g.lchance(30) {
		c.Properties = map[string]string{"lance.k": g.id("v")}
	}
	g.lanceIDs = append(g.lanceIDs, c.ID)
	return c
}

// lanceNext is the version a table's next create names.
func lanceNext(tb *fsm.Table) int64 {
	if tb.Lance == nil || tb.Lance.Count == 0 {
		return 1
	}
	return tb.Lance.Latest + 1
}

// lanceVersionOf creates version v of tb from a staging manifest of its
// own (now and then from none, so that it cannot be replayed).
func (g *logGen) lanceVersionOf(tb *fsm.Table, v int64) *fsm.CreateLanceVersion {
	path := fmt.Sprintf("%s/_versions/%d.manifest", tb.Location, v)
	lv := fsm.LanceVersion{Version: v, ManifestPath: path, ManifestSize: int64(200 + g.lpick(800)), ETag: g.id("etag"),
		Source: path + "." + g.id("stg")}
	if g.lchance(10) {
		lv.Source = ""
	}
	if g.lchance(20) {
		lv.Metadata = map[string]string{"operation": []string{"append", "overwrite", "delete"}[g.lpick(3)]}
	}
	if g.lchance(5) { // the command's own table and time win
		lv.TableID, lv.TimestampMillis = "ignored", 1
	}
	return &fsm.CreateLanceVersion{Stamp: g.lstamp(), Namespace: slices.Clone(tb.NamespacePath()), Name: tb.Name,
		TableID: tb.ID, Version: lv}
}

// lanceVersion mostly creates the table's next version (sometimes past a
// gap); else it replays the last create, repeats an existing version,
// names a table replaced meanwhile, a table not Lance's or no manifest.
func (g *logGen) lanceVersion(tb *fsm.Table) *fsm.CreateLanceVersion {
	switch r := g.lpick(100); {
	case r < 10 && g.lastLance != nil:
		return g.lastLance
	case r < 22:
		return g.lanceExisting(tb)
	case r < 26:
		c := g.lanceVersionOf(tb, lanceNext(tb))
		c.TableID = g.lanceIDs[g.lpick(len(g.lanceIDs))]
		return c
	case r < 29:
		if other := g.notLance(); other != nil {
			return g.lanceVersionOf(other, 1)
		}
	case r < 31:
		c := g.lanceVersionOf(tb, lanceNext(tb))
		c.Version.ManifestPath = ""
		return c
	}
	v := lanceNext(tb)
	if g.lchance(10) {
		v += int64(1 + g.lpick(3))
	}
	g.lastLance = g.lanceVersionOf(tb, v)
	return g.lastLance
}

// lanceExisting names a version the table has: from the same staging
// manifest (a retry, a no-op) or from another one (a conflict).
func (g *logGen) lanceExisting(tb *fsm.Table) *fsm.CreateLanceVersion {
	vs := g.driver.State().LanceVersions(tb, -1, false, 0)
	if len(vs) == 0 {
		return g.lanceVersionOf(tb, 0)
	}
	old := vs[g.lpick(len(vs))]
	c := g.lanceVersionOf(tb, old.Version)
	if g.lchance(60) {
		c.Version.ManifestPath, c.Version.Source = old.ManifestPath, old.Source
	}
	return c
}

// lanceDelete deletes one or two ranges of versions, which may overlap.
func (g *logGen) lanceDelete(tb *fsm.Table) *fsm.DeleteLanceVersions {
	c := &fsm.DeleteLanceVersions{Stamp: g.lstamp(), Namespace: slices.Clone(tb.NamespacePath()), Name: tb.Name}
	for range 1 + g.lpick(2) {
		c.Ranges = append(c.Ranges, g.lanceRange(tb))
	}
	return c
}

// lanceRange is a range of old versions, or the newest through the latest
// (End -1), or an invalid range.
func (g *logGen) lanceRange(tb *fsm.Table) fsm.VersionRange {
	latest := tb.Lance.Latest
	switch r := g.lpick(100); {
	case r < 30:
		return fsm.VersionRange{Start: max(0, latest-int64(g.lpick(3))), End: -1}
	case r < 86:
		start := int64(g.lpick(int(latest) + 2))
		return fsm.VersionRange{Start: start, End: start + int64(g.lpick(4))}
	case r < 93:
		return fsm.VersionRange{Start: 3, End: 1}
	}
	return fsm.VersionRange{Start: -1, End: -1}
}

// lanceDrop drops a Lance table, sometimes a table not Lance's or a
// missing one.
func (g *logGen) lanceDrop(tb *fsm.Table) *fsm.DropLanceTable {
	c := &fsm.DropLanceTable{Stamp: g.lstamp(), Namespace: slices.Clone(tb.NamespacePath()), Name: tb.Name}
	switch r := g.lpick(100); {
	case r < 20:
		if other := g.notLance(); other != nil {
			c.Namespace, c.Name = other.NamespacePath(), other.Name
		}
	case r < 35:
		c.Name = g.lanceName()
	}
	return c
}

// lanceRename renames a Lance table in its namespace or moves it to
// another (some missing, some in another catalog), sometimes onto a
// taken name or onto itself.
func (g *logGen) lanceRename(tb *fsm.Table) *fsm.RenameLanceTable {
	c := &fsm.RenameLanceTable{Stamp: g.lstamp(), Namespace: slices.Clone(tb.NamespacePath()), Name: tb.Name,
		NewNamespace: slices.Clone(tb.NamespacePath()), NewName: g.lanceName()}
	switch r := g.lpick(100); {
	case r < 35:
		c.NewNamespace = g.lanceNamespace()
	case r < 42:
		c.NewName = tb.Name
	case r < 48:
		c.Name = g.lanceName()
	}
	return c
}

// lanceTxn is a transaction being drawn: its commands and, per table
// uuid, the next Lance or Delta version and the Iceberg metadata pointer
// its earlier commands leave.
type lanceTxn struct {
	ops  []fsm.Command
	next map[string]int64
	base map[string]string
}

// lanceTransaction emits a transaction of one to four commands mixing
// Lance versions, declares, deletes and drops with Delta and Iceberg
// commits, a quarter of them ending with a command that fails.
func (g *logGen) lanceTransaction(ts []*fsm.Table) {
	x := &lanceTxn{next: map[string]int64{}, base: map[string]string{}}
	for range 1 + g.lpick(4) {
		x.ops = append(x.ops, g.transactionOp(x, ts))
	}
	if g.lchance(25) {
		x.ops = append(x.ops, g.failingOp(x, ts))
	}
	g.lemitTransaction(x.ops...)
}

func (g *logGen) lemitTransaction(ops ...fsm.Command) {
	tr, err := fsm.NewTransaction(g.lstamp(), ops...)
	if err != nil {
		g.t.Fatalf("NewTransaction: %v", err)
	}
	g.lemit(tr)
}

// transactionOp is one command of a transaction; versions it creates
// follow those the transaction created before.
func (g *logGen) transactionOp(x *lanceTxn, ts []*fsm.Table) fsm.Command {
	switch r := g.lpick(100); {
	case r < 40 && len(ts) > 0:
		return g.txnLanceVersion(x, ts[g.lpick(len(ts))])
	case r < 48:
		return g.lanceDeclare()
	case r < 54 && len(ts) > 0:
		return g.lanceDelete(ts[g.lpick(len(ts))])
	case r < 57 && len(ts) > 0:
		tb := ts[g.lpick(len(ts))]
		return &fsm.DropLanceTable{Stamp: g.lstamp(), Namespace: slices.Clone(tb.NamespacePath()), Name: tb.Name}
	case r < 78:
		if c := g.txnDeltaCommit(x); c != nil {
			return c
		}
	default:
		if c := g.txnIcebergCommit(x, false); c != nil {
			return c
		}
	}
	return g.lanceDeclare()
}

func (g *logGen) txnLanceVersion(x *lanceTxn, tb *fsm.Table) *fsm.CreateLanceVersion {
	if _, ok := x.next[tb.ID]; !ok {
		x.next[tb.ID] = lanceNext(tb)
	}
	x.next[tb.ID]++
	return g.lanceVersionOf(tb, x.next[tb.ID]-1)
}

// managedDelta is a managed Delta table, or nil.
func (g *logGen) managedDelta() *fsm.Table {
	var ms []*fsm.Table
	for _, tb := range g.tables() {
		if tb.Type == fsm.TableManaged && tb.Format == fsm.FormatDelta {
			ms = append(ms, tb)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	return ms[g.lpick(len(ms))]
}

// txnDeltaCommit adds the next commit to a managed Delta table, or is nil.
func (g *logGen) txnDeltaCommit(x *lanceTxn) *fsm.UpdateTable {
	tb := g.managedDelta()
	if tb == nil {
		return nil
	}
	if _, ok := x.next[tb.ID]; !ok {
		x.next[tb.ID] = tb.LatestVersion() + 1
	}
	x.next[tb.ID]++
	return g.deltaCommitOf(tb, x.next[tb.ID]-1)
}

func (g *logGen) deltaCommitOf(tb *fsm.Table, v int64) *fsm.UpdateTable {
	c := fsm.Commit{Version: v, Timestamp: g.clock + v, FileName: fmt.Sprintf("%020d.%s.json", v, g.id("f")),
		FileSize: int64(100 + g.lpick(1000)), FileModTime: g.clock}
	ac := &fsm.AddCommit{Commit: c}
	if uniformEnabledProp(tb) {
		ac.Uniform = &fsm.IcebergUniform{MetadataLocation: tb.Location + "/_uniform/" + g.id("m") + ".json",
			ConvertedDeltaVersion: v, ConvertedDeltaTimestamp: g.clock}
	}
	return &fsm.UpdateTable{Stamp: g.lstamp(), CatalogName: tb.CatalogName, SchemaName: tb.SchemaName, Name: tb.Name,
		AssertUUID: tb.ID, AddCommit: ac}
}

// txnIcebergCommit commits to an Iceberg table from the pointer the
// transaction leaves it at (or from a stale one), or is nil.
func (g *logGen) txnIcebergCommit(x *lanceTxn, stale bool) *fsm.CommitIcebergTables {
	ts := g.icebergTables()
	if len(ts) == 0 {
		return nil
	}
	tb := ts[g.lpick(len(ts))]
	base, ok := x.base[tb.ID]
	if !ok {
		base = tb.Iceberg.MetadataLocation
	}
	if stale {
		base = "s3://ice/m/stale"
	}
	e := fsm.IcebergCommit{Namespace: slices.Clone(tb.NamespacePath()), Name: tb.Name, BaseMetadataLocation: base,
		MetadataLocation: "s3://ice/m/" + g.id("m")}
	x.base[tb.ID] = e.MetadataLocation
	return &fsm.CommitIcebergTables{Stamp: g.lstamp(), Tables: []fsm.IcebergCommit{e}}
}

// failingOp is a last command that fails: a version for a table replaced
// meanwhile, a version the transaction created already from another
// manifest, a Delta commit of a version taken or an Iceberg commit from a
// stale pointer.
func (g *logGen) failingOp(x *lanceTxn, ts []*fsm.Table) fsm.Command {
	switch r := g.lpick(4); {
	case r == 0 && len(ts) > 0:
		c := g.lanceVersionOf(ts[g.lpick(len(ts))], 1)
		c.TableID = "lance-replaced"
		return c
	case r == 1 && len(ts) > 0:
		tb := ts[g.lpick(len(ts))]
		c := g.txnLanceVersion(x, tb)
		x.ops = append(x.ops, c)
		return g.lanceVersionOf(tb, c.Version.Version)
	case r == 2:
		if tb := g.managedDelta(); tb != nil {
			return g.deltaCommitOf(tb, max(1, tb.LatestVersion()))
		}
	}
	if c := g.txnIcebergCommit(x, true); c != nil {
		return c
	}
	return &fsm.DropLanceTable{Stamp: g.lstamp(), Namespace: []string{"unity", "default"}, Name: "missing"}
}

// lanceReplace drops a Lance table, declares it again (a new uuid at a new
// location) and creates the new table's first version, in one
// transaction; sometimes the version still names the old table.
func (g *logGen) lanceReplace(tb *fsm.Table) {
	ns := slices.Clone(tb.NamespacePath())
	d := g.lanceDeclare()
	d.Namespace, d.Name = ns, tb.Name
	fresh := &fsm.Table{ID: d.ID, CatalogName: ns[0], SchemaName: ns[1], Subnamespace: ns[2:], Name: tb.Name, Location: d.Location}
	v := g.lanceVersionOf(fresh, 1)
	if g.lchance(20) {
		v.TableID = tb.ID
	}
	g.lemitTransaction(&fsm.DropLanceTable{Stamp: g.lstamp(), Namespace: ns, Name: tb.Name}, d, v)
}

// lanceBadTransaction is a transaction refused whole: empty, or with a
// command that may not take part.
func (g *logGen) lanceBadTransaction() {
	tr := &fsm.Transaction{Stamp: g.lstamp()}
	if g.lchance(60) {
		tr.Ops = []fsm.TransactionOp{{Type: fsm.CmdCreateCatalog, Command: []byte(`{"id":"x","name":"tx"}`)},
			{Type: fsm.CmdRenameLanceTable, Command: []byte(`{}`)}}[g.lpick(2):]
	}
	g.lemit(tr)
}

// lanceTablesOf lists the Lance tables of a state, in every namespace.
func lanceTablesOf(st *fsm.State) []*fsm.Table {
	var out []*fsm.Table
	var walk func(path []string)
	walk = func(path []string) {
		if len(path) >= 2 {
			out = append(out, st.TablesInWhere(path, "", 0, isLance)...)
		}
		for _, n := range st.Namespaces(path, "", 0) {
			walk(n.Path)
		}
	}
	walk(nil)
	return out
}

// sameLanceAnswers checks that two states answer every Lance lookup
// identically: the tables, and the versions of every uuid ever declared.
func sameLanceAnswers(t testing.TB, a, b *fsm.State, g *logGen) {
	t.Helper()
	eq := func(what string, x, y any) {
		t.Helper()
		if jx, jy := jsonOf(t, x), jsonOf(t, y); jx != jy {
			t.Fatalf("%s differs:\n%s\n%s", what, jx, jy)
		}
	}
	eq("lance tables", lanceTablesOf(a), lanceTablesOf(b))
	for _, id := range g.lanceIDs {
		tb := &fsm.Table{ID: id}
		eq("versions of "+id, a.LanceVersions(tb, -1, false, 0), b.LanceVersions(tb, -1, false, 0))
		eq("versions of "+id+" descending", a.LanceVersions(tb, -1, true, 0), b.LanceVersions(tb, -1, true, 0))
		eq("version page of "+id, a.LanceVersions(tb, 3, true, 2), b.LanceVersions(tb, 3, true, 2))
		va, oka := a.LanceVersion(tb, 1)
		vb, okb := b.LanceVersion(tb, 1)
		eq("version 1 of "+id, []any{va, oka}, []any{vb, okb})
	}
}

// checkLanceRecords checks that every Lance table's count and latest
// version match its version records, and that no uuid without a table
// keeps any.
func checkLanceRecords(t testing.TB, st *fsm.State, g *logGen) {
	t.Helper()
	live := map[string]bool{}
	for _, tb := range lanceTablesOf(st) {
		live[tb.ID] = true
		vs := st.LanceVersions(tb, -1, true, 0)
		if int64(len(vs)) != tb.Lance.Count || (len(vs) > 0 && (vs[0].Version != tb.Lance.Latest || tb.Lance.OnlyDeclared)) {
			t.Fatalf("table %s holds %+v, its records %s", tb.FullName(), tb.Lance, jsonOf(t, vs))
		}
	}
	for _, id := range g.lanceIDs {
		if vs := st.LanceVersions(&fsm.Table{ID: id}, -1, false, 0); !live[id] && len(vs) > 0 {
			t.Fatalf("table %s is gone but keeps %d versions", id, len(vs))
		}
	}
}

// lanceVariety counts, per Lance command type and Transaction, the
// entries of the log that applied, were no-ops and were refused, and the
// transactions that applied across formats and that failed at their last
// command.
type lanceVariety struct {
	ok, noop, refused     map[fsm.CommandType]int
	crossFormat, lastFail int
}

func lanceVarietyOf(t testing.TB, log [][]byte, results []fsm.Result) lanceVariety {
	v := lanceVariety{ok: map[fsm.CommandType]int{}, noop: map[fsm.CommandType]int{}, refused: map[fsm.CommandType]int{}}
	for i, b := range log {
		ct := fsm.CommandType(b[0])
		if ct < fsm.CmdDeclareLanceTable || ct > fsm.CmdTransaction {
			continue
		}
		switch r := results[i]; {
		case r.Err != nil:
			v.refused[ct]++
		case r.NoOp:
			v.noop[ct]++
		default:
			v.ok[ct]++
		}
		if ct == fsm.CmdTransaction {
			v.countTransaction(t, b, results[i])
		}
	}
	return v
}

func (v *lanceVariety) countTransaction(t testing.TB, b []byte, r fsm.Result) {
	cmd, err := fsm.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	tr := cmd.(*fsm.Transaction)
	formats := map[bool]bool{}
	for _, op := range tr.Ops {
		formats[op.Type >= fsm.CmdDeclareLanceTable] = true
	}
	switch {
	case r.Err != nil && len(tr.Ops) > 1 && len(r.Steps) == len(tr.Ops):
		v.lastFail++
	case r.Err == nil && !r.NoOp && len(formats) == 2:
		v.crossFormat++
	}
}

// checkLanceVariety fails unless every Lance command and Transaction
// applied at least once and most were refused at least once, version
// creates were replayed, and transactions applied across formats and
// failed at their last command.
func checkLanceVariety(t testing.TB, g *logGen) {
	t.Helper()
	v := lanceVarietyOf(t, g.log, g.results)
	t.Logf("lance: applied %v, no-op %v, refused %v; %d cross-format transactions, %d failed at the last command; %d tables",
		v.ok, v.noop, v.refused, v.crossFormat, v.lastFail, len(lanceTablesOf(g.driver.State())))
	nRefused := 0
	for ct := fsm.CmdDeclareLanceTable; ct <= fsm.CmdTransaction; ct++ {
		if v.ok[ct] == 0 {
			t.Fatalf("the log has no applied %v", ct)
		}
		if v.refused[ct] > 0 {
			nRefused++
		}
	}
	if nRefused < 5 {
		t.Fatalf("only %d Lance command types were ever refused", nRefused)
	}
	if v.noop[fsm.CmdCreateLanceVersion] == 0 || v.crossFormat == 0 || v.lastFail == 0 {
		t.Fatal("the log has no replayed Lance version, cross-format transaction or transaction failing at its last command")
	}
	checkLanceRecords(t, g.driver.State(), g)
}
