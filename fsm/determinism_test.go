package fsm_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

// logGen produces a random but reproducible command log. It applies every
// entry to its own driver machine so that it can aim most commands at
// things that exist (and still produce a steady share of failures).
type logGen struct {
	t       testing.TB
	rng     *rand.Rand
	driver  *fsm.Machine
	log     [][]byte
	results []fsm.Result
	clock   int64
	ids     int
	staging []string
	rules   bool // stamp the current validation rules (else the original ones)
	// lastIceberg is the last Iceberg commit emitted, to replay.
	lastIceberg *fsm.CommitIcebergTables
	// lastView is the last view replace emitted, to replay.
	lastView *fsm.ReplaceIcebergView
	// activations and bearers are the token hashes emitted, to activate
	// tokens and to look them up.
	activations, bearers []string
	// srng draws the Delta Sharing commands (determinism_sharing_test.go),
	// so that the other commands come as they did before sharing existed;
	// sharingEntries counts them.
	srng           *rand.Rand
	sharingEntries int
	// lrng draws the Lance commands and transactions
	// (determinism_lance_test.go) as srng does the sharing ones;
	// lanceEntries counts them, lanceIDs are the Lance table uuids
	// declared and lastLance is the last version create, to replay.
	lrng         *rand.Rand
	lanceEntries int
	lanceIDs     []string
	lastLance    *fsm.CreateLanceVersion
	// arng draws the principal, token, grant and signing key commands
	// (determinism_auth_test.go), which take their ids from authIDs and
	// leave the clock be, so that the other commands come exactly as they
	// did before; authEntries counts them, tokenIDs are the token ids
	// emitted and grantKeys the securables granted on, to look them up.
	arng        *rand.Rand
	authEntries int
	authIDs     int
	tokenIDs    []string
	grantKeys   []string
	// grng draws the gossip keyring commands (determinism_gossip_test.go)
	// as arng does the auth ones; gossipEntries counts them.
	grng          *rand.Rand
	gossipEntries int
}

func newLogGen(t testing.TB, seed uint64) *logGen {
	return &logGen{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), driver: fsm.NewMachine(), clock: baseTime,
		srng: rand.New(rand.NewPCG(seed^0x5ca1ab1e, seed)), lrng: rand.New(rand.NewPCG(seed^0x1a9ce, seed+1)),
		arng: rand.New(rand.NewPCG(seed^0xa7e5, seed+2)), grng: rand.New(rand.NewPCG(seed^0x6055, seed+3))}
}

func (g *logGen) stamp() fsm.Stamp {
	g.clock += int64(g.rng.IntN(2000)) - 200 // mostly forward, sometimes behind
	caller := owner
	if g.rng.IntN(20) == 0 {
		caller = "bob"
	}
	st := fsm.Stamp{Time: g.clock, Caller: caller}
	if g.rules {
		st.Rules = fsm.CurrentRules
	}
	return st
}

func (g *logGen) id(prefix string) string {
	g.ids++
	return fmt.Sprintf("%s-%05d", prefix, g.ids)
}

func (g *logGen) pick(n int) int { return g.rng.IntN(n) }

func (g *logGen) chance(pct int) bool { return g.rng.IntN(100) < pct }

func (g *logGen) name(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, g.pick(n)) }

// emit encodes cmd, applies it to the driver and appends it to the log.
func (g *logGen) emit(cmd fsm.Command) {
	b, err := fsm.Encode(cmd)
	if err != nil {
		g.t.Fatalf("encode %T: %v", cmd, err)
	}
	g.emitRaw(b)
}

func (g *logGen) emitRaw(b []byte) {
	idx := uint64(len(g.log) + 1)
	res, err := g.driver.Apply(idx, b)
	if err != nil {
		g.t.Fatalf("driver apply %d: %v", idx, err)
	}
	g.log = append(g.log, b)
	g.results = append(g.results, res)
}

func (g *logGen) schemas() []*fsm.Schema {
	st := g.driver.State()
	var out []*fsm.Schema
	for _, c := range st.Catalogs("", 0) {
		out = append(out, st.Schemas(c.Name, "", 0)...)
	}
	return out
}

func (g *logGen) tables() []*fsm.Table {
	st := g.driver.State()
	var out []*fsm.Table
	for _, s := range g.schemas() {
		out = append(out, st.Tables(s.CatalogName, s.Name, "", 0)...)
	}
	return out
}

// schemaRef returns an existing schema most of the time, else a missing one.
func (g *logGen) schemaRef() (string, string) {
	ss := g.schemas()
	if len(ss) == 0 || g.chance(8) {
		return g.name("c", 5), g.name("s", 4)
	}
	s := ss[g.pick(len(ss))]
	return s.CatalogName, s.Name
}

func (g *logGen) table() *fsm.Table {
	ts := g.tables()
	if len(ts) == 0 {
		return nil
	}
	return ts[g.pick(len(ts))]
}

func (g *logGen) managedTable() *fsm.Table {
	var ms []*fsm.Table
	for _, tb := range g.tables() {
		if tb.Type == fsm.TableManaged && tb.Format == fsm.FormatDelta {
			ms = append(ms, tb)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	if g.chance(50) { // a hot table reaches the unbackfilled limit
		return slices.MaxFunc(ms, func(a, b *fsm.Table) int { return int(a.LatestVersion() - b.LatestVersion()) })
	}
	return ms[g.pick(len(ms))]
}

func (g *logGen) commit(v int64) fsm.Commit {
	return fsm.Commit{Version: v, Timestamp: g.clock + v, FileName: fmt.Sprintf("%020d.%s.json", v, g.id("f")),
		FileSize: int64(100 + g.pick(1000)), FileModTime: g.clock}
}

func (g *logGen) update(tb *fsm.Table) *fsm.UpdateTable {
	c := &fsm.UpdateTable{Stamp: g.stamp(), CatalogName: tb.CatalogName, SchemaName: tb.SchemaName, Name: tb.Name, AssertUUID: tb.ID}
	switch {
	case g.chance(4):
		c.AssertUUID = "wrong"
	case g.chance(3):
		c.AssertUUID = ""
	}
	switch {
	case g.chance(20):
		c.AssertETag = ptr(tb.ETag())
	case g.chance(8):
		c.AssertETag = ptr("stale")
	}
	return c
}

func (g *logGen) addCommitCmd(tb *fsm.Table) *fsm.UpdateTable {
	c := g.update(tb)
	last := tb.LatestVersion()
	first := last
	if len(tb.Commits) > 0 {
		first = tb.Commits[0].Version
	}
	ac := &fsm.AddCommit{}
	switch r := g.pick(20); {
	case r < 12 || last == 0:
		ac.Commit = g.commit(last + 1)
		if last > 0 && g.chance(10) {
			c.SetLatestBackfilled = ptr(first - 1 + int64(g.pick(int(last-first)+3)))
		}
	case r < 14:
		old := tb.Commits[g.pick(len(tb.Commits))]
		ac.Commit = old // replay
		if g.chance(50) {
			c.SetProperties = &map[string]string{"replayed": "yes"}
		}
	case r < 16:
		ac.Commit = g.commit(last) // conflict
	case r < 17:
		ac.Commit = g.commit(last + 2) // gap
	default:
		v := first - 1
		if v < 1 {
			v = 1
		}
		ac.Commit = g.commit(v)
		ac.PurgedReplay = []string{"", fsm.ReplayIdentical, fsm.ReplayDifferent, fsm.ReplayUnknown}[g.pick(4)]
	}
	if uniformEnabledProp(tb) {
		ac.Uniform = &fsm.IcebergUniform{MetadataLocation: tb.Location + "/_uniform/" + g.id("m") + ".json",
			ConvertedDeltaVersion: ac.Commit.Version, ConvertedDeltaTimestamp: g.clock}
	}
	c.AddCommit = ac
	return c
}

func uniformEnabledProp(tb *fsm.Table) bool {
	return tb.Properties[fsm.PropUniformFormats] == "iceberg"
}

func (g *logGen) metadataCmd(tb *fsm.Table) *fsm.UpdateTable {
	c := g.update(tb)
	if g.chance(40) {
		m := map[string]string{}
		for range 1 + g.pick(3) {
			m[g.name("p", 6)] = g.id("v")
		}
		if g.chance(5) {
			m[fsm.PropUniformFormats] = "iceberg"
		}
		c.SetProperties = &m
	}
	if g.chance(20) {
		keys := slices.Sorted(maps.Keys(tb.Properties))
		rm := []string{"missing"}
		if len(keys) > 0 {
			rm = append(rm, keys[g.pick(len(keys))])
		}
		c.RemoveProperties = &rm
	}
	if g.chance(15) {
		c.SetTableComment = ptr(g.id("comment"))
	}
	if g.chance(15) {
		dm := &fsm.DomainMetadata{}
		if g.chance(50) {
			dm.RowIDHighWaterMark = ptr(int64(g.pick(10000)))
		} else {
			dm.ClusteringColumns = &[][]string{{"id"}}
		}
		c.SetDomainMetadata = dm
	}
	if g.chance(8) {
		c.RemoveDomainMetadata = &[]string{[]string{fsm.DomainClustering, fsm.DomainRowTracking}[g.pick(2)]}
	}
	if g.chance(10) {
		switch g.pick(3) {
		case 0:
			c.SetProtocol = ptr(managedProtocol("domainMetadata", "rowTracking", "clustering"))
		case 1:
			c.SetProtocol = ptr(managedProtocol("domainMetadata"))
		default:
			c.SetProtocol = &fsm.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
		}
	}
	if g.chance(10) {
		switch g.pick(3) {
		case 0:
			c.SetPartitionColumns = &[]string{[]string{"id", "AMOUNT", "nope"}[g.pick(3)]}
		case 1:
			c.SetColumns = ptr(testColumns())
		default:
			c.SetColumns = &fsm.ColumnsSpec{Columns: json.RawMessage(`{"type":"struct","fields":[]}`), Names: []string{"other"}}
		}
	}
	if tb.Type == fsm.TableExternal && g.chance(20) {
		c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: int64(g.pick(50)), LastCommitTimestampMs: g.clock}
	}
	if g.chance(10) && tb.Type == fsm.TableManaged {
		c.AddCommit = &fsm.AddCommit{Commit: g.commit(tb.LatestVersion() + 1)}
	}
	if c.SetProperties == nil && c.RemoveProperties == nil && c.SetTableComment == nil && c.SetDomainMetadata == nil &&
		c.RemoveDomainMetadata == nil && c.SetProtocol == nil && c.SetColumns == nil && c.SetPartitionColumns == nil &&
		c.SetSnapshotVersion == nil && c.AddCommit == nil {
		c.SetTableComment = ptr("")
	}
	return c
}

// step emits one random command.
func (g *logGen) step() {
	if g.grng.IntN(100) < 6 {
		g.gossipKeyCmd()
		return
	}
	if g.arng.IntN(100) < 15 {
		g.authCmd()
		return
	}
	if g.srng.IntN(100) < 15 {
		g.sharingCmd()
		return
	}
	if g.lrng.IntN(100) < 20 {
		g.lanceCmd()
		return
	}
	switch r := g.pick(100); {
	case r < 4:
		root := ""
		if g.chance(50) {
			root = "s3://cat-" + g.name("r", 3)
		}
		g.emit(&fsm.CreateCatalog{Stamp: g.stamp(), ID: g.id("cat"), Name: g.name("c", 5), StorageRoot: root,
			Properties: map[string]string{"k": g.id("v")}})
	case r < 10:
		cat := g.name("c", 5)
		if cs := g.driver.State().Catalogs("", 0); len(cs) > 0 && !g.chance(10) {
			cat = cs[g.pick(len(cs))].Name
		}
		root := ""
		if g.chance(30) {
			root = "s3://sch-" + g.name("r", 3) + "/"
		}
		g.emit(&fsm.CreateSchema{Stamp: g.stamp(), ID: g.id("sch"), CatalogName: cat, Name: g.name("s", 4), StorageRoot: root})
	case r < 18:
		cat, sch := g.schemaRef()
		id := g.id("tbl")
		g.staging = append(g.staging, id)
		g.emit(&fsm.CreateStagingTable{Stamp: g.stamp(), ID: id, CatalogName: cat, SchemaName: sch, Name: g.name("t", 6)})
	case r < 27:
		if len(g.staging) == 0 {
			g.emit(&fsm.Init{Stamp: g.stamp(), MetastoreID: "again"})
			return
		}
		st, ok := g.driver.State().StagingTable(g.staging[g.pick(len(g.staging))])
		if !ok {
			g.emit(&fsm.CreateTable{Stamp: g.stamp(), CatalogName: "unity", SchemaName: "default", Name: "lost",
				Format: fsm.FormatDelta, TableType: fsm.TableManaged, Location: "s3://nowhere/" + g.id("x")})
			return
		}
		h := &env{t: g.t, clock: g.clock}
		c := h.managedCreate(st, st.Name)
		c.Stamp = g.stamp()
		if g.chance(30) {
			c.Protocol = managedProtocol("domainMetadata", "rowTracking", "clustering")
			c.DomainMetadata.ClusteringColumns = &[][]string{{"id"}, {"amount"}}
			c.PartitionColumns = []string{"amount"}
		}
		if g.chance(10) {
			c.Properties[fsm.PropTableID] = "wrong"
		}
		if g.chance(10) {
			c.Name = g.name("t", 6)
		}
		g.emit(c)
	case r < 32:
		cat, sch := g.schemaRef()
		h := &env{t: g.t}
		c := h.externalCreate(cat, sch, g.name("t", 6))
		c.Stamp, c.ID = g.stamp(), g.id("ext")
		g.emit(c)
	case r < 62:
		tb := g.managedTable()
		if tb == nil {
			g.emit(&fsm.UpdateTable{Stamp: g.stamp(), CatalogName: "unity", SchemaName: "default", Name: "none",
				AddCommit: &fsm.AddCommit{Commit: g.commit(1)}})
			return
		}
		g.emit(g.addCommitCmd(tb))
	case r < 66:
		tb := g.table()
		if tb == nil {
			return
		}
		c := g.update(tb)
		last := tb.LatestVersion()
		c.SetLatestBackfilled = ptr(last - int64(g.pick(4)) + 1)
		g.emit(c)
	case r < 76:
		tb := g.table()
		if tb == nil {
			return
		}
		g.emit(g.metadataCmd(tb))
	case r < 84:
		g.icebergCmd()
	case r < 88:
		tb := g.table()
		if tb == nil {
			return
		}
		g.emit(&fsm.RenameTable{Stamp: g.stamp(), CatalogName: tb.CatalogName, SchemaName: tb.SchemaName, Name: tb.Name, NewName: g.name("t", 7)})
	case r < 90:
		tb := g.table()
		if tb == nil {
			return
		}
		g.emit(&fsm.DeleteTable{Stamp: g.stamp(), CatalogName: tb.CatalogName, SchemaName: tb.SchemaName, Name: tb.Name})
	case r < 93:
		cat, sch := g.schemaRef()
		c := &fsm.UpdateSchema{Stamp: g.stamp(), CatalogName: cat, Name: sch, Comment: ptr(g.id("c"))}
		if g.chance(40) {
			c.NewName = g.name("s", 4)
		}
		if g.chance(30) {
			c.Properties = &map[string]string{"a": g.id("v")}
		}
		g.emit(c)
	case r < 95:
		cat, _ := g.schemaRef()
		c := &fsm.UpdateCatalog{Stamp: g.stamp(), Name: cat, Properties: &map[string]string{"b": g.id("v")}}
		if g.chance(20) {
			c.NewName = g.name("c", 5)
		}
		g.emit(c)
	case r < 97:
		cat, sch := g.schemaRef()
		if g.chance(70) {
			g.emit(&fsm.DeleteSchema{Stamp: g.stamp(), CatalogName: cat, Name: sch, Force: g.chance(20)})
		} else {
			g.emit(&fsm.DeleteCatalog{Stamp: g.stamp(), Name: cat, Force: g.chance(10)})
		}
	case r < 98:
		g.emitRaw(append([]byte{byte(fsm.IgnoreUnknownFlag | 0x70), 1}, `{"future":true}`...))
	case g.chance(50):
		g.emit(&fsm.Init{Stamp: g.stamp(), MetastoreID: "again", StorageRoot: "s3://again"})
	default:
		g.nestedNamespaceCmd()
	}
}

// nestedNamespaceCmd creates or deletes a namespace below a schema.
func (g *logGen) nestedNamespaceCmd() {
	cat, sch := g.schemaRef()
	path := []string{cat, sch, g.name("n", 3)}
	if g.chance(40) {
		path = append(path, g.name("n", 2))
	}
	if g.chance(70) {
		g.emit(&fsm.CreateNamespace{Stamp: g.stamp(), ID: g.id("ns"), Path: path})
		return
	}
	g.emit(&fsm.DeleteNamespace{Stamp: g.stamp(), Path: path, Force: g.chance(50)})
}

func writeState(t testing.TB, st *fsm.State, index uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := snapshot.WriteState(&buf, st, snapshot.Header{Index: index, Term: 3}); err != nil {
		t.Fatalf("WriteState: %v", err)
	}
	return buf.Bytes()
}

func replay(t testing.TB, m *fsm.Machine, log [][]byte, from uint64) []fsm.Result {
	t.Helper()
	out := make([]fsm.Result, 0, len(log))
	for i, b := range log {
		res, err := m.Apply(from+uint64(i), b)
		if err != nil {
			t.Fatalf("apply %d: %v", from+uint64(i), err)
		}
		out = append(out, res)
	}
	return out
}

func sameResults(t testing.TB, what string, a, b []fsm.Result) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d results", what, len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("%s: result %d differs:\n%s\n%s", what, i+1, jsonOf(t, a[i]), jsonOf(t, b[i]))
		}
	}
}

// sameSerialisedResults compares results as they serialise. A state
// restored from a snapshot may hold nil where the original held an empty
// slice (both encode the same), so this is the comparison that matters
// across a restore.
func sameSerialisedResults(t testing.TB, what string, a, b []fsm.Result) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d results", what, len(a), len(b))
	}
	for i := range a {
		ja, jb := jsonOf(t, a[i]), jsonOf(t, b[i])
		if ja != jb {
			t.Fatalf("%s: result %d differs:\n%s\n%s", what, i+1, ja, jb)
		}
		if a[i].Table != nil && a[i].Table.ETag() != b[i].Table.ETag() {
			t.Fatalf("%s: result %d etags differ", what, i+1)
		}
	}
}

// sameAnswers checks that two states answer every lookup identically.
func sameAnswers(t testing.TB, a, b *fsm.State, stagingIDs []string) {
	t.Helper()
	eq := func(what string, x, y any) {
		t.Helper()
		if jx, jy := jsonOf(t, x), jsonOf(t, y); jx != jy {
			t.Fatalf("%s differs:\n%s\n%s", what, jx, jy)
		}
	}
	eq("metastore", a.Metastore(), b.Metastore())
	ac, as, at, am := a.Counts()
	bc, bs, bt, bm := b.Counts()
	if [4]int{ac, as, at, am} != [4]int{bc, bs, bt, bm} {
		t.Fatalf("counts %v vs %v", [4]int{ac, as, at, am}, [4]int{bc, bs, bt, bm})
	}
	eq("catalogs", a.Catalogs("", 0), b.Catalogs("", 0))
	eq("catalog page", a.Catalogs("c1", 2), b.Catalogs("c1", 2))
	for _, c := range a.Catalogs("", 0) {
		bcat, ok := b.Catalog(c.Name)
		if !ok {
			t.Fatalf("catalog %s missing", c.Name)
		}
		eq("catalog "+c.Name, c, bcat)
		eq("schemas of "+c.Name, a.Schemas(c.Name, "", 0), b.Schemas(c.Name, "", 0))
		for _, s := range a.Schemas(c.Name, "", 0) {
			bs, _ := b.Schema(c.Name, s.Name)
			eq("schema "+s.FullName(), s, bs)
			eq("tables of "+s.FullName(), a.Tables(c.Name, s.Name, "", 0), b.Tables(c.Name, s.Name, "", 0))
			for _, tb := range a.Tables(c.Name, s.Name, "", 0) {
				btb, ok := b.Table(c.Name, s.Name, tb.Name)
				if !ok {
					t.Fatalf("table %s missing", tb.FullName())
				}
				eq("table "+tb.FullName(), tb, btb)
				if tb.ETag() != btb.ETag() || tb.LatestVersion() != btb.LatestVersion() {
					t.Fatalf("table %s: etag/latest differ", tb.FullName())
				}
				eq("unbackfilled of "+tb.FullName(), tb.UnbackfilledCommits(), btb.UnbackfilledCommits())
			}
		}
	}
	for _, id := range stagingIDs {
		sa, oka := a.StagingTable(id)
		sb, okb := b.StagingTable(id)
		if oka != okb {
			t.Fatalf("staging %s: present %v vs %v", id, oka, okb)
		}
		if !oka {
			continue
		}
		eq("staging "+id, sa, sb)
		la, _ := a.StagingByLocation(sa.Location)
		lb, _ := b.StagingByLocation(sa.Location)
		eq("staging by location "+id, la, lb)
	}
}

func TestDeterministicReplicasAndSnapshots(t *testing.T) {
	for _, seed := range []uint64{20240611, 7, 99991} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkDeterministic(t, seed, false) })
		t.Run(fmt.Sprint(seed, " with current rules"), func(t *testing.T) { checkDeterministic(t, seed, true) })
	}
}

func checkDeterministic(t *testing.T, seed uint64, rules bool) {
	g := newLogGen(t, seed)
	g.rules = rules
	g.emit(&fsm.Init{Stamp: g.stamp(), MetastoreID: "ms", StorageRoot: metastoreRoot, CatalogID: "cat-u", SchemaID: "sch-d"})
	for i := range 3 {
		root := ""
		if i == 1 {
			root = "s3://cat-root"
		}
		g.emit(&fsm.CreateCatalog{Stamp: g.stamp(), ID: g.id("cat"), Name: fmt.Sprintf("c%d", i), StorageRoot: root})
		for j := range 3 {
			root := ""
			if j == 2 {
				root = "s3://sch-root/"
			}
			g.emit(&fsm.CreateSchema{Stamp: g.stamp(), ID: g.id("sch"), CatalogName: fmt.Sprintf("c%d", i), Name: fmt.Sprintf("s%d", j), StorageRoot: root})
		}
	}
	for len(g.log)-g.sharingEntries-g.lanceEntries-g.authEntries-g.gossipEntries < 600 {
		g.step()
	}
	var failures, noops, successes int
	codes := map[fsm.Code]int{}
	for _, r := range g.results {
		switch {
		case r.Err != nil:
			failures++
			codes[r.Err.Code]++
		case r.NoOp:
			noops++
		default:
			successes++
		}
	}
	_, _, tables, commits := g.driver.State().Counts()
	t.Logf("log: %d entries, %d ok, %d no-op, %d failed %v; %d tables, %d tracked commits",
		len(g.log), successes, noops, failures, codes, tables, commits)
	multi, props, views := icebergVariety(g.results)
	t.Logf("iceberg: %d multi-table commits, %d namespace property updates, %d view changes", multi, props, views)
	if multi == 0 || props == 0 || views < 3 {
		t.Fatal("the log has no Iceberg multi-table commit, namespace property update or view changes")
	}
	checkSharingVariety(t, g)
	checkLanceVariety(t, g)
	checkAuthVariety(t, g)
	checkGossipKeyVariety(t, g)
	if failures < 50 || noops < 10 || successes < 200 || tables < 5 || commits < 20 || len(codes) < 8 || codes[fsm.CodeResourceExhausted] == 0 {
		t.Fatalf("log is not varied enough: ok %d, no-op %d, failed %d %v, tables %d, commits %d",
			successes, noops, failures, codes, tables, commits)
	}

	m1, m2 := fsm.NewMachine(), fsm.NewMachine()
	r1 := replay(t, m1, g.log, 1)
	r2 := replay(t, m2, g.log, 1)
	sameResults(t, "replica 1 vs 2", r1, r2)
	sameResults(t, "driver vs replica", g.results, r1)

	n := uint64(len(g.log))
	b0 := writeState(t, g.driver.State(), n)
	b1 := writeState(t, m1.State(), n)
	b2 := writeState(t, m2.State(), n)
	if !bytes.Equal(b1, b2) || !bytes.Equal(b0, b1) {
		t.Fatalf("replicas serialise differently (%d / %d / %d bytes)", len(b0), len(b1), len(b2))
	}
	// Serialising the same state twice gives the same bytes.
	if again := writeState(t, m1.State(), n); !bytes.Equal(again, b1) {
		t.Fatal("WriteState is not repeatable")
	}

	restored, hdr, err := snapshot.ReadState(bytes.NewReader(b1))
	if err != nil {
		t.Fatalf("ReadState: %v", err)
	}
	if hdr.Index != n || hdr.Term != 3 {
		t.Fatalf("header = %+v", hdr)
	}
	if rb := writeState(t, restored, n); !bytes.Equal(rb, b1) {
		t.Fatalf("restored state serialises differently (%d vs %d bytes)", len(rb), len(b1))
	}
	sameAnswers(t, m1.State(), restored, g.staging)
	sameSharingAnswers(t, m1.State(), restored, g)
	sameLanceAnswers(t, m1.State(), restored, g)
	sameAuthAnswers(t, m1.State(), restored, g)
	sameGossipKeyring(t, m1.State(), restored)

	// A replica restored from the snapshot continues exactly like the
	// replicas that applied the whole log.
	m3 := fsm.NewMachine()
	m3.Replace(restored)
	start := len(g.log)
	for len(g.log) < start+250 {
		g.step()
	}
	tail := g.log[start:]
	ra := replay(t, m1, tail, n+1)
	rc := replay(t, m3, tail, n+1)
	sameSerialisedResults(t, "continued vs restored", ra, rc)
	sameResults(t, "driver vs continued", g.results[start:], ra)
	end := uint64(len(g.log))
	if x, y := writeState(t, m1.State(), end), writeState(t, m3.State(), end); !bytes.Equal(x, y) {
		t.Fatal("restored replica diverged after further commands")
	}
	sameAnswers(t, m1.State(), m3.State(), g.staging)
	sameSharingAnswers(t, m1.State(), m3.State(), g)
	sameLanceAnswers(t, m1.State(), m3.State(), g)
	checkLanceRecords(t, m3.State(), g)
	sameAuthAnswers(t, m1.State(), m3.State(), g)
	sameGossipKeyring(t, m1.State(), m3.State())
	checkAuthRecords(t, m3.State(), g)
}

// Different logs must not serialise to the same bytes (guards against a
// serialiser that ignores the state).
func TestSnapshotReflectsState(t *testing.T) {
	e := newEnv(t)
	before := writeState(t, e.m.State(), 1)
	e.createCatalog("c", "")
	after := writeState(t, e.m.State(), 1)
	if bytes.Equal(before, after) {
		t.Fatal("snapshot bytes did not change with the state")
	}
	tb := e.createManaged("unity", "default", "t")
	s1 := writeState(t, e.m.State(), 1)
	e.changed(e.addCommit(tb, 1))
	s2 := writeState(t, e.m.State(), 1)
	if bytes.Equal(s1, s2) {
		t.Fatal("snapshot bytes ignore the commit log")
	}
	restored, _, err := snapshot.ReadState(bytes.NewReader(s2))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := restored.Table("unity", "default", "t")
	if !ok || got.ETag() != e.reload(tb).ETag() || got.LatestVersion() != 1 {
		t.Fatalf("restored table = %+v", got)
	}
	if st, ok := restored.StagingByLocation(tb.Location); !ok || !st.Committed || st.ID != tb.ID {
		t.Fatalf("restored staging = %+v, %v", st, ok)
	}
	// A restored managed table keeps enforcing its rules.
	m := fsm.NewMachine()
	m.Replace(restored)
	b, _ := fsm.Encode(&fsm.UpdateTable{CatalogName: "unity", SchemaName: "default", Name: "t", AssertUUID: tb.ID,
		AddCommit: &fsm.AddCommit{Commit: commitOf(1, "other")}})
	res, err := m.Apply(100, b)
	if err != nil || res.Err == nil || res.Err.Code != fsm.CodeCommitVersionConflict {
		t.Fatalf("conflicting commit on restored state: %+v, %v", res, err)
	}
	if !restored.Initialized() || restored.Metastore().ID != "ms-1" {
		t.Fatal("restored metastore")
	}
}

// The log recorded by release 2fa8555 (every command type, failures
// included) applies with the same result at every index and ends in the
// same state.
func TestRecordedLogOfRelease2fa8555AppliesIdentically(t *testing.T) {
	var rec recordedLog
	readFixture(t, "log-2fa8555.json.gz", &rec)
	types := map[int]int{}
	m := fsm.NewMachine()
	for _, e := range rec.Entries {
		b, err := base64.StdEncoding.DecodeString(e.Entry)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Apply(e.Index, b)
		if err != nil {
			t.Fatalf("entry %d: %v", e.Index, err)
		}
		sameJSON(t, "result of entry "+jsonOf(t, e.Index), viewResult(res), e.Result)
		types[e.Type]++
	}
	for ct := fsm.CmdInit; ct <= fsm.CmdRenameTable; ct++ {
		if types[int(ct)] == 0 {
			t.Fatalf("the recorded log has no command of type %d", ct)
		}
	}
	sameJSON(t, "final state", viewState(m.State(), rec.StagingIDs), rec.Final)

	// The state the old log built survives a snapshot in this release's format.
	restored, _, err := snapshot.ReadState(bytes.NewReader(writeState(t, m.State(), uint64(len(rec.Entries)))))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "restored final state", viewState(restored, rec.StagingIDs), rec.Final)
}
