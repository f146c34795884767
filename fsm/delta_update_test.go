package fsm_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// createManagedWith stages and creates a MANAGED table after mod has
// adjusted the create command.
func (e *env) createManagedWith(cat, sch, name string, mod func(*fsm.CreateTable)) *fsm.Table {
	e.t.Helper()
	st := e.stage(cat, sch, name)
	c := e.managedCreate(st, name)
	mod(c)
	return e.changed(c).Table
}

// clusteredProtocol is the managed protocol with clustering and rowTracking.
func clusteredProtocol() fsm.Protocol {
	return managedProtocol("domainMetadata", "rowTracking", "clustering")
}

func withClustering(c *fsm.CreateTable) {
	c.Protocol = clusteredProtocol()
	c.DomainMetadata.ClusteringColumns = &[][]string{{"id"}}
}

func TestETagRules(t *testing.T) {
	type kind int
	const (
		managed kind = iota
		external
	)
	cases := []struct {
		name    string
		table   kind
		mod     func(*fsm.UpdateTable)
		changes bool
		noop    bool
	}{
		{"set-properties", managed, func(c *fsm.UpdateTable) { c.SetProperties = &map[string]string{"a": "b"} }, true, false},
		{"set-properties empty", managed, func(c *fsm.UpdateTable) { c.SetProperties = &map[string]string{} }, true, false},
		{"remove-properties missing key", managed, func(c *fsm.UpdateTable) { c.RemoveProperties = &[]string{"missing"} }, true, false},
		{"set-protocol unchanged", managed, func(c *fsm.UpdateTable) { c.SetProtocol = ptr(clusteredProtocol()) }, true, false},
		{"set-columns", managed, func(c *fsm.UpdateTable) { c.SetColumns = ptr(testColumns()) }, true, false},
		{"set-partition-columns", managed, func(c *fsm.UpdateTable) { c.SetPartitionColumns = &[]string{"amount"} }, true, false},
		{"set-table-comment empty", managed, func(c *fsm.UpdateTable) { c.SetTableComment = ptr("") }, true, false},
		{"set-domain-metadata clustering", managed, func(c *fsm.UpdateTable) {
			c.SetDomainMetadata = &fsm.DomainMetadata{ClusteringColumns: &[][]string{{"amount"}}}
		}, true, false},
		{"set-domain-metadata clustering and rowTracking", managed, func(c *fsm.UpdateTable) {
			c.SetDomainMetadata = &fsm.DomainMetadata{ClusteringColumns: &[][]string{}, RowIDHighWaterMark: ptr(int64(120))}
		}, true, false},
		{"set-domain-metadata rowTracking only", managed, func(c *fsm.UpdateTable) {
			c.SetDomainMetadata = &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(120))}
		}, false, false},
		{"remove-domain-metadata rowTracking", managed, func(c *fsm.UpdateTable) { c.RemoveDomainMetadata = &[]string{fsm.DomainRowTracking} }, true, false},
		{"remove-domain-metadata clustering", managed, func(c *fsm.UpdateTable) { c.RemoveDomainMetadata = &[]string{fsm.DomainClustering} }, true, false},
		{"update-metadata-snapshot-version", external, func(c *fsm.UpdateTable) {
			c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: 3, LastCommitTimestampMs: 4}
		}, true, false},
		{"set-properties on external", external, func(c *fsm.UpdateTable) { c.SetProperties = &map[string]string{"a": "b"} }, true, false},
		{"data-only commit", managed, func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")} }, false, false},
		{"backfill to last", managed, func(c *fsm.UpdateTable) { c.SetLatestBackfilled = ptr(int64(1)) }, false, false},
		{"backfill below first", managed, func(c *fsm.UpdateTable) { c.SetLatestBackfilled = ptr(int64(0)) }, false, false},
		{"commit with backfill", managed, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
			c.SetLatestBackfilled = ptr(int64(1))
		}, false, false},
		{"commit with rowTracking high-water mark", managed, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
			c.SetDomainMetadata = &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(150))}
		}, false, false},
		{"commit with set-properties", managed, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
			c.SetProperties = &map[string]string{"a": "b"}
		}, true, false},
		{"replay with set-properties", managed, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")}
			c.SetProperties = &map[string]string{"a": "b"}
		}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var tb *fsm.Table
			if tc.table == managed {
				tb = e.createManagedWith("unity", "default", "t", withClustering)
				e.changed(e.addCommit(tb, 1))
			} else {
				tb = e.createExternal("unity", "default", "t")
			}
			before := e.reload(tb)
			cmd := e.upd(tb, tc.mod)
			if tc.noop {
				e.noop(cmd)
			} else {
				e.ok(cmd)
			}
			after := e.reload(tb)
			if changed := after.ETag() != before.ETag(); changed != tc.changes {
				t.Fatalf("etag changed = %v, want %v", changed, tc.changes)
			}
			if changed := after.UpdatedAt != before.UpdatedAt; changed != tc.changes {
				t.Fatalf("updated-time changed = %v, want %v", changed, tc.changes)
			}
			if tc.changes && (after.MetaIndex != e.lastIndex() || after.UpdatedAt != cmd.Time || after.UpdatedBy != owner) {
				t.Fatalf("metadata change: MetaIndex %d (index %d), updated %d by %q (time %d)",
					after.MetaIndex, e.lastIndex(), after.UpdatedAt, after.UpdatedBy, cmd.Time)
			}
			if !tc.changes && after.MetaIndex != before.MetaIndex {
				t.Fatalf("MetaIndex moved %d → %d", before.MetaIndex, after.MetaIndex)
			}
		})
	}
}

func TestETagIsStableAndDistinct(t *testing.T) {
	e := newEnv(t)
	a := e.createManaged("unity", "default", "a")
	b := e.createManaged("unity", "default", "b")
	if a.ETag() == b.ETag() {
		t.Fatal("two tables share an etag")
	}
	if a.ETag() != e.reload(a).ETag() {
		t.Fatal("etag not stable across reads")
	}
	seen := map[string]bool{a.ETag(): true}
	for i := range 5 {
		e.changed(e.upd(a, func(c *fsm.UpdateTable) { c.SetTableComment = ptr(strconv.Itoa(i)) }))
		tag := e.reload(a).ETag()
		if seen[tag] {
			t.Fatalf("etag %s repeated after metadata change %d", tag, i)
		}
		seen[tag] = true
	}
}

// Clients keep etags to assert them later, across upgrades: the same
// table and metadata index must always give the same etag.
func TestETagValuesNeverChange(t *testing.T) {
	for _, c := range []struct {
		id    string
		index uint64
		want  string
	}{
		{"0f8e3c2a-5b7d-4e1f-9a6c-3d2b1e0f4a5c", 42, "RalypQ7BHUcDVOPMvt02vKYq"},
		{"", 0, "r1Vw9aGBC3r3jK9LxwpmDw31"},
		{"an id much longer than fifty-six bytes, to leave the stack buffer behind", 1 << 40, "zIaTkzgN6FTPQD5jzEcv5eD2"},
	} {
		if got := (&fsm.Table{ID: c.id, MetaIndex: c.index}).ETag(); got != c.want {
			t.Errorf("etag of %q at %d = %s, want %s", c.id, c.index, got, c.want)
		}
	}
}

// The updated-time never goes backwards, but the etag still changes.
func TestUpdatedTimeMonotonic(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	cmd := e.upd(tb, func(c *fsm.UpdateTable) { c.SetTableComment = ptr("x") })
	cmd.Time = tb.UpdatedAt - 50_000
	got := e.changed(cmd).Table
	if got.UpdatedAt != tb.UpdatedAt || got.ETag() == tb.ETag() {
		t.Fatalf("updated %d (was %d), etag changed %v", got.UpdatedAt, tb.UpdatedAt, got.ETag() != tb.ETag())
	}
}

func TestAssertETag(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.changed(e.addCommit(tb, 1))
	e0 := e.reload(tb).ETag()

	// The pre-apply etag passes even though the request changes it.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e0)
		c.SetProperties = &map[string]string{"k": "v"}
	}))
	cur := e.reload(tb)
	e1 := cur.ETag()
	if e1 == e0 {
		t.Fatal("etag did not change")
	}

	// UC Delta case 44: stale etag is a requirement conflict, nothing applied.
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e0)
		c.SetTableComment = ptr("late")
	}), fsm.CodeRequirementConflict, "assert-etag failed: expected "+e0+" but table has "+e1)
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e0)
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
	}), fsm.CodeRequirementConflict, "assert-etag failed")
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e0)
		c.SetLatestBackfilled = ptr(int64(1))
	}), fsm.CodeRequirementConflict, "assert-etag failed")
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) { c.AssertETag = ptr("") }), fsm.CodeRequirementConflict, "assert-etag failed")

	// Errors of the actions take precedence over a stale etag.
	stale := func(f func(*fsm.UpdateTable)) *fsm.UpdateTable {
		return e.upd(tb, func(c *fsm.UpdateTable) { c.AssertETag = ptr(e0); f(c) })
	}
	e.fail(stale(func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "a")} }), fsm.CodeInvalid, "next version")
	e.fail(stale(func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "b")} }), fsm.CodeCommitVersionConflict, "already accepted")
	e.fail(stale(func(c *fsm.UpdateTable) { c.SetSnapshotVersion = &fsm.SnapshotVersion{} }), fsm.CodeInvalid, "EXTERNAL")
	e.fail(stale(func(c *fsm.UpdateTable) { c.SetProtocol = &fsm.Protocol{MinReaderVersion: 3, MinWriterVersion: 7} }), fsm.CodeInvalid, "catalogManaged")
	// A replay bypasses the etag check.
	e.noop(stale(func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")} }))

	// A data-only commit with the current etag keeps it current.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e1)
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
	}))
	e.ok(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e1)
		c.SetLatestBackfilled = ptr(int64(1))
	}))
	if got := e.reload(tb).ETag(); got != e1 {
		t.Fatal("data-only requests changed the etag")
	}
	got := e.reload(tb)
	if got.Comment != nil || got.Properties["k"] != "v" {
		t.Fatalf("table = %+v", got)
	}
	wantVersions(t, got, 2)
}

// UC Delta case 39 and its precedence.
func TestAssertTableUUID(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	wrong := func(f func(*fsm.UpdateTable)) *fsm.UpdateTable {
		return e.upd(tb, func(c *fsm.UpdateTable) { c.AssertUUID = "not-" + tb.ID; f(c) })
	}
	msg := "assert-table-uuid failed: expected not-" + tb.ID + " but table has " + tb.ID
	e.fail(wrong(func(c *fsm.UpdateTable) { c.SetProperties = &map[string]string{"a": "b"} }), fsm.CodeRequirementConflict, msg)
	// It precedes action validation and the commit log.
	e.fail(wrong(func(c *fsm.UpdateTable) { c.SetProtocol = &fsm.Protocol{} }), fsm.CodeRequirementConflict, msg)
	e.fail(wrong(func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(7, "a")} }), fsm.CodeRequirementConflict, msg)
	e.fail(wrong(func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")} }), fsm.CodeRequirementConflict, msg)
	// A table re-created under the same name has a new uuid: requests for
	// the old one fail.
	e.changed(&fsm.DeleteTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t"})
	e.createManaged("unity", "default", "t")
	e.fail(e.addCommit(tb, 1), fsm.CodeRequirementConflict, "assert-table-uuid failed")
}

// UC Delta case 59.
func TestCase59ReplayWithStaleETag(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e0 := tb.ETag()
	req := func() *fsm.UpdateTable {
		return e.upd(tb, func(c *fsm.UpdateTable) {
			c.AssertETag = ptr(e0)
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")}
			c.SetProperties = &map[string]string{"k": "v"}
		})
	}
	e.changed(req())
	e1 := e.reload(tb).ETag()
	if e1 == e0 {
		t.Fatal("add-commit + set-properties did not change the etag")
	}
	e.noop(req())
	got := e.reload(tb)
	if got.Properties["k"] != "v" || got.ETag() != e1 || got.LatestVersion() != 1 {
		t.Fatalf("after replay: %+v", got)
	}
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e0)
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
	}), fsm.CodeRequirementConflict, "assert-etag failed")
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(e1)
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
	}))
	if got := e.reload(tb); got.LatestVersion() != 2 {
		t.Fatalf("latest = %d", got.LatestVersion())
	}
}

// UC Delta case 60.
func TestCase60ReplayIgnoresBackfill(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, 2)
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) { c.SetTableComment = ptr("bump") }))
	e.noop(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AssertETag = ptr(tb.ETag())
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
		c.SetLatestBackfilled = ptr(int64(1))
	}))
	got := e.reload(tb)
	wantVersions(t, got, 2, 1)
	if len(got.Commits) != 2 {
		t.Fatalf("tracked commits = %+v", got.Commits)
	}
}

// UC Delta case 46.
func TestMetadataUmbrella(t *testing.T) {
	e := newEnv(t)
	tb := e.createManagedWith("unity", "default", "t", func(c *fsm.CreateTable) {
		c.Properties["update_me"] = "v_old"
		c.Properties["drop_me"] = "x"
		c.Properties["keep"] = "k"
	})
	proto := managedProtocol("domainMetadata", "rowTracking", "clustering", "columnMapping")
	proto.ReaderFeatures = append(proto.ReaderFeatures, "columnMapping")
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.SetProperties = &map[string]string{"update_me": "v_new", "added": "v4"}
		c.RemoveProperties = &[]string{"drop_me", "missing"}
		c.SetProtocol = &proto
		c.SetDomainMetadata = &fsm.DomainMetadata{ClusteringColumns: &[][]string{{"id"}}}
		c.SetTableComment = ptr("umbrella")
	}))
	got := e.reload(tb)
	p := got.Properties
	if p["keep"] != "k" || p["update_me"] != "v_new" || p["added"] != "v4" {
		t.Fatalf("properties = %v", p)
	}
	for _, k := range []string{"drop_me", "missing"} {
		if _, ok := p[k]; ok {
			t.Fatalf("removed key %s still present", k)
		}
	}
	if got, want := featureKeys(p), featureKeysOf(proto); !slices.Equal(got, want) {
		t.Fatalf("feature keys = %v, want %v", got, want)
	}
	if p[fsm.PropClustering] != `[["id"]]` || p[fsm.PropRowIDHighWater] != "99" {
		t.Fatalf("domain properties: clustering %q, hwm %q", p[fsm.PropClustering], p[fsm.PropRowIDHighWater])
	}
	if p[fsm.PropMinReader] != "3" || p[fsm.PropMinWriter] != "7" {
		t.Fatalf("protocol versions %s/%s", p[fsm.PropMinReader], p[fsm.PropMinWriter])
	}
	if got.Comment == nil || *got.Comment != "umbrella" || got.UpdatedAt <= tb.UpdatedAt || got.ETag() == tb.ETag() {
		t.Fatalf("comment/updated/etag: %+v", got)
	}
	// Without a commit in the request, nothing is stamped.
	if p[fsm.PropLastUpdate] != "0" || p[fsm.PropLastCommitTs] != tb.Properties[fsm.PropLastCommitTs] {
		t.Fatalf("metadata change without commit stamped %s=%s", fsm.PropLastUpdate, p[fsm.PropLastUpdate])
	}
}

// Canonical order: set-properties runs before remove-properties, and
// set-protocol before set-properties, whatever the request says.
func TestCanonicalActionOrder(t *testing.T) {
	e := newEnv(t)
	ext := e.createExternal("unity", "default", "ext")
	e.changed(e.upd(ext, func(c *fsm.UpdateTable) {
		// set-protocol clears every delta.feature.* key before set-properties
		// adds one back; the snapshot version overrides a client value.
		c.SetProtocol = &fsm.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
		c.SetProperties = &map[string]string{fsm.PropFeaturePrefix + "custom": "enabled",
			fsm.PropLastUpdate: "999", "x": "1"}
		c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: 5, LastCommitTimestampMs: 6}
	}))
	p := e.reload(ext).Properties
	if p[fsm.PropFeaturePrefix+"custom"] != "enabled" || p[fsm.PropLastUpdate] != "5" || p["x"] != "1" {
		t.Fatalf("properties = %v", p)
	}
	// set-domain-metadata runs after remove-properties.
	tb := e.createManaged("unity", "default", "t")
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.RemoveProperties = &[]string{fsm.PropRowIDHighWater}
		c.SetDomainMetadata = &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(7))}
	}))
	if got := e.reload(tb).Properties[fsm.PropRowIDHighWater]; got != "7" {
		t.Fatalf("high-water mark = %q, want 7", got)
	}
}

// Domain metadata add and remove.
func TestDomainMetadata(t *testing.T) {
	e := newEnv(t)
	tb := e.createManagedWith("unity", "default", "t", withClustering)
	// UC Delta case 47
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) { c.RemoveDomainMetadata = &[]string{fsm.DomainRowTracking} }))
	p := e.reload(tb).Properties
	if _, ok := p[fsm.PropRowIDHighWater]; ok {
		t.Fatal("high-water mark survived remove-domain-metadata")
	}
	if p[fsm.PropClustering] != `[["id"]]` {
		t.Fatalf("clustering = %q", p[fsm.PropClustering])
	}
	// UC Delta case 48
	before := e.reload(tb)
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.SetDomainMetadata = &fsm.DomainMetadata{ClusteringColumns: &[][]string{{"a", "b"}, {"amount"}}, RowIDHighWaterMark: ptr(int64(200))}
	}))
	after := e.reload(tb)
	if after.Properties[fsm.PropClustering] != `[["a","b"],["amount"]]` || after.Properties[fsm.PropRowIDHighWater] != "200" {
		t.Fatalf("domains = %q %q", after.Properties[fsm.PropClustering], after.Properties[fsm.PropRowIDHighWater])
	}
	var paths [][]string
	if err := json.Unmarshal([]byte(after.Properties[fsm.PropClustering]), &paths); err != nil || len(paths) != 2 {
		t.Fatalf("clustering is not a JSON path list: %v", err)
	}
	if after.ETag() == before.ETag() {
		t.Fatal("set-domain-metadata with clustering did not change the etag")
	}
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.RemoveDomainMetadata = &[]string{fsm.DomainClustering, fsm.DomainRowTracking}
	}))
	p = e.reload(tb).Properties
	if _, ok := p[fsm.PropClustering]; ok {
		t.Fatal("clustering survived")
	}
	if _, ok := p[fsm.PropRowIDHighWater]; ok {
		t.Fatal("high-water mark survived")
	}
	// Only the tracked domains map to properties.
	if !fsm.KnownDomain(fsm.DomainClustering) || !fsm.KnownDomain(fsm.DomainRowTracking) || fsm.KnownDomain("delta.other") {
		t.Fatal("KnownDomain")
	}
}

// The managed contract re-check after set-protocol and set-domain-metadata.
func TestManagedContractRecheck(t *testing.T) {
	noRowTracking := managedProtocol("domainMetadata")
	cases := []struct {
		name string
		mod  func(*fsm.UpdateTable)
		msg  string // "" means success
	}{
		// UC Delta case 50
		{"drop catalogManaged", func(c *fsm.UpdateTable) {
			p := managedProtocol("domainMetadata", "rowTracking")
			p.ReaderFeatures = slices.DeleteFunc(p.ReaderFeatures, func(f string) bool { return f == "catalogManaged" })
			p.WriterFeatures = slices.DeleteFunc(p.WriterFeatures, func(f string) bool { return f == "catalogManaged" })
			c.SetProtocol = &p
		}, "catalogManaged"},
		{"drop catalogManaged writer only", func(c *fsm.UpdateTable) {
			p := managedProtocol("domainMetadata", "rowTracking")
			p.WriterFeatures = slices.DeleteFunc(p.WriterFeatures, func(f string) bool { return f == "catalogManaged" })
			c.SetProtocol = &p
		}, "Feature 'catalogManaged' is in reader-features but not writer-features"},
		{"lower reader version", func(c *fsm.UpdateTable) {
			p := managedProtocol("domainMetadata", "rowTracking")
			p.MinReaderVersion = 2
			c.SetProtocol = &p
		}, "minReaderVersion must be at least 3 (got 2)"},
		{"lower writer version", func(c *fsm.UpdateTable) {
			p := managedProtocol("domainMetadata", "rowTracking")
			p.MinWriterVersion = 6
			c.SetProtocol = &p
		}, "minWriterVersion must be at least 7 (got 6)"},
		// UC Delta case 50
		{"drop rowTracking while mark stored", func(c *fsm.UpdateTable) { c.SetProtocol = ptr(noRowTracking) },
			"domain-metadata.delta.rowTracking requires the 'rowTracking' writer feature."},
		// UC Delta case 49
		{"drop rowTracking with its domain", func(c *fsm.UpdateTable) {
			c.SetProtocol = ptr(noRowTracking)
			c.RemoveDomainMetadata = &[]string{fsm.DomainRowTracking}
		}, ""},
		{"drop rowTracking, remove mark by property", func(c *fsm.UpdateTable) {
			c.SetProtocol = ptr(noRowTracking)
			c.RemoveProperties = &[]string{fsm.PropRowIDHighWater}
		}, ""},
		{"set-protocol with bad checkpoint policy", func(c *fsm.UpdateTable) {
			c.SetProtocol = ptr(managedProtocol("domainMetadata", "rowTracking"))
			c.SetProperties = &map[string]string{"delta.checkpointPolicy": "v1"}
		}, "MANAGED table required property 'delta.checkpointPolicy' must be 'v2' (got 'v1')."},
		{"set-protocol with table id removed", func(c *fsm.UpdateTable) {
			c.SetProtocol = ptr(managedProtocol("domainMetadata", "rowTracking"))
			c.RemoveProperties = &[]string{fsm.PropTableID}
		}, "MANAGED table required property 'io.unitycatalog.tableId' is missing."},
		{"contract properties unchecked without set-protocol", func(c *fsm.UpdateTable) {
			c.SetProperties = &map[string]string{"delta.enableDeletionVectors": "false"}
		}, ""},
		{"clustering domain without feature", func(c *fsm.UpdateTable) {
			c.SetDomainMetadata = &fsm.DomainMetadata{ClusteringColumns: &[][]string{{"id"}}}
		}, "domain-metadata.delta.clustering requires the 'clustering' writer feature."},
		{"clustering domain with feature in same request", func(c *fsm.UpdateTable) {
			c.SetProtocol = ptr(clusteredProtocol())
			c.SetDomainMetadata = &fsm.DomainMetadata{ClusteringColumns: &[][]string{{"id"}}}
		}, ""},
		{"rowTracking domain with feature", func(c *fsm.UpdateTable) {
			c.SetDomainMetadata = &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(1000))}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tb := e.createManaged("unity", "default", "t")
			cmd := e.upd(tb, tc.mod)
			if tc.msg != "" {
				e.fail(cmd, fsm.CodeInvalid, tc.msg)
				return
			}
			e.changed(cmd)
		})
	}

	// UC Delta case 49: after rowTracking is dropped with its domain, setting the
	// domain again is refused.
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.SetProtocol = ptr(noRowTracking)
		c.RemoveDomainMetadata = &[]string{fsm.DomainRowTracking}
	}))
	if got := featureKeys(e.reload(tb).Properties); slices.Contains(got, fsm.PropFeaturePrefix+"rowTracking") {
		t.Fatalf("rowTracking feature still declared: %v", got)
	}
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.SetDomainMetadata = &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(5))}
	}), fsm.CodeInvalid, "rowTracking")
	// An EXTERNAL table has no contract.
	ext := e.createExternal("unity", "default", "ext")
	e.changed(e.upd(ext, func(c *fsm.UpdateTable) {
		c.SetDomainMetadata = &fsm.DomainMetadata{ClusteringColumns: &[][]string{{"id"}}, RowIDHighWaterMark: ptr(int64(1))}
	}))
}

// UC Delta case 51.
func TestSetProtocolExternal(t *testing.T) {
	e := newEnv(t)
	c := e.externalCreate("unity", "default", "ext")
	c.Protocol = fsm.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "appendOnly"}}
	ext := e.changed(c).Table
	if got := featureKeys(ext.Properties); len(got) != 2 {
		t.Fatalf("feature keys after create = %v", got)
	}
	e.changed(e.upd(ext, func(u *fsm.UpdateTable) {
		u.SetProtocol = &fsm.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}
	}))
	p := e.reload(ext).Properties
	if got := featureKeys(p); !slices.Equal(got, []string{fsm.PropFeaturePrefix + "v2Checkpoint"}) {
		t.Fatalf("feature keys = %v", got)
	}
	if p[fsm.PropFeaturePrefix+"v2Checkpoint"] != "supported" || p["owner.team"] != "data" {
		t.Fatalf("properties = %v", p)
	}
}

// update-metadata-snapshot-version.
func TestSnapshotVersion(t *testing.T) {
	e := newEnv(t)
	// UC Delta case 52
	ext := e.createExternal("unity", "default", "ext")
	e.changed(e.upd(ext, func(c *fsm.UpdateTable) {
		c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: 42, LastCommitTimestampMs: 1700000000001}
	}))
	p := e.reload(ext).Properties
	if p[fsm.PropLastUpdate] != "42" || p[fsm.PropLastCommitTs] != "1700000000001" {
		t.Fatalf("snapshot version properties: %s / %s", p[fsm.PropLastUpdate], p[fsm.PropLastCommitTs])
	}
	const msg = "update-metadata-snapshot-version is only supported for EXTERNAL Delta tables; for MANAGED tables, use the Delta commit endpoint."
	tb := e.createManaged("unity", "default", "t")
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: 42, LastCommitTimestampMs: 1}
	}), fsm.CodeInvalid, msg)
	// UC Delta case 69
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: 1, LastCommitTimestampMs: 1}
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")}
	}), fsm.CodeInvalid, msg)
	if got := e.reload(tb); got.LatestVersion() != 0 {
		t.Fatal("commit applied despite the error")
	}
}

// set-columns and set-partition-columns.
func TestColumnsAndPartitions(t *testing.T) {
	newCols := fsm.ColumnsSpec{Columns: json.RawMessage(`{"type":"struct","fields":[` +
		`{"name":"new_id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"Flag","type":"boolean","nullable":true,"metadata":{}}]}`), Names: []string{"new_id", "Flag"}}
	wider := testColumns()
	wider.Columns = json.RawMessage(`{"type":"struct","fields":[` +
		`{"name":"id","type":"long","nullable":false,"metadata":{}},` +
		`{"name":"amount","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"extra","type":"string","nullable":true,"metadata":{}}]}`)
	wider.Names = []string{"id", "amount", "extra"}
	cases := []struct {
		name      string
		mod       func(*fsm.UpdateTable)
		wantCols  []string
		wantParts []string
		wantRaw   json.RawMessage
		errMsg    string
	}{
		// UC Delta case 53
		{"columns and partitions together", func(c *fsm.UpdateTable) {
			c.SetColumns = &newCols
			c.SetPartitionColumns = &[]string{"FLAG"}
		}, []string{"new_id", "Flag"}, []string{"Flag"}, newCols.Columns, ""},
		// UC Delta case 53
		{"partitions alone", func(c *fsm.UpdateTable) { c.SetPartitionColumns = &[]string{"amount"} },
			[]string{"id", "amount"}, []string{"amount"}, testColumns().Columns, ""},
		{"partitions resolved case-insensitively", func(c *fsm.UpdateTable) { c.SetPartitionColumns = &[]string{"AMOUNT", "Id"} },
			[]string{"id", "amount"}, []string{"amount", "id"}, testColumns().Columns, ""},
		{"unpartition", func(c *fsm.UpdateTable) { c.SetPartitionColumns = &[]string{} },
			[]string{"id", "amount"}, []string{}, testColumns().Columns, ""},
		// UC Delta case 53
		{"columns alone keep partitions", func(c *fsm.UpdateTable) { c.SetColumns = &wider },
			[]string{"id", "amount", "extra"}, []string{"id"}, wider.Columns, ""},
		// UC Delta case 53
		{"columns dropping a partition column", func(c *fsm.UpdateTable) { c.SetColumns = &newCols },
			nil, nil, nil, "partition-columns references unknown column: id"},
		{"columns dropping it with a new partitioning", func(c *fsm.UpdateTable) {
			c.SetColumns = &newCols
			c.SetPartitionColumns = &[]string{}
		}, []string{"new_id", "Flag"}, []string{}, newCols.Columns, ""},
		{"unknown partition column", func(c *fsm.UpdateTable) { c.SetPartitionColumns = &[]string{"nope"} },
			nil, nil, nil, "partition-columns references unknown column: nope"},
		{"duplicate partition column", func(c *fsm.UpdateTable) { c.SetPartitionColumns = &[]string{"id", "ID"} },
			nil, nil, nil, "partition-columns contains duplicate entry (case-insensitive): ID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tb := e.createManagedWith("unity", "default", "t", func(c *fsm.CreateTable) { c.PartitionColumns = []string{"id"} })
			cmd := e.upd(tb, tc.mod)
			if tc.errMsg != "" {
				e.fail(cmd, fsm.CodeInvalid, tc.errMsg)
				return
			}
			got := e.changed(cmd).Table
			if !slices.Equal(got.ColumnNames, tc.wantCols) || !slices.Equal(got.PartitionColumns, tc.wantParts) ||
				string(got.Columns) != string(tc.wantRaw) {
				t.Fatalf("columns %v %s, partitions %v", got.ColumnNames, got.Columns, got.PartitionColumns)
			}
		})
	}
	parts, err := fsm.ResolvePartitionColumns([]string{"id"}, []string{"ID"})
	if err != nil || !slices.Equal(parts, []string{"id"}) {
		t.Fatalf("ResolvePartitionColumns = %v, %v", parts, err)
	}
}

func TestSetTableComment(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	if tb.Comment != nil {
		t.Fatal("fresh table has a comment")
	}
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) { c.SetTableComment = ptr("") }))
	if got := e.reload(tb).Comment; got == nil || *got != "" {
		t.Fatalf("empty comment = %v", got)
	}
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) { c.SetTableComment = ptr("hello") }))
	if got := e.reload(tb).Comment; got == nil || *got != "hello" {
		t.Fatalf("comment = %v", got)
	}
}

// UC Delta case 62: auto-stamping of the last commit on metadata-changing commits.
func TestCommitStamping(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	stamp := func(v int64) (string, string) {
		return strconv.FormatInt(v, 10), strconv.FormatInt(commitOf(v, "a").Timestamp, 10)
	}
	check := func(wantVersion int64) *fsm.Table {
		t.Helper()
		got := e.reload(tb)
		wv, wts := stamp(wantVersion)
		if got.Properties[fsm.PropLastUpdate] != wv || got.Properties[fsm.PropLastCommitTs] != wts {
			t.Fatalf("stamped %s/%s, want %s/%s", got.Properties[fsm.PropLastUpdate], got.Properties[fsm.PropLastCommitTs], wv, wts)
		}
		return got
	}
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")}
		c.SetProperties = &map[string]string{"k": "v"}
	}))
	check(1)
	e.changed(e.addCommit(tb, 2))
	before := check(1)
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "a")}
		c.SetDomainMetadata = &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(150))}
	}))
	got := check(1)
	if got.Properties[fsm.PropRowIDHighWater] != "150" || got.ETag() != before.ETag() || got.UpdatedAt != before.UpdatedAt {
		t.Fatalf("high-water mark commit: hwm %q, etag changed %v", got.Properties[fsm.PropRowIDHighWater], got.ETag() != before.ETag())
	}
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(4, "a")}
		c.SetColumns = ptr(testColumns())
	}))
	check(4)
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(5, "a")}
		c.SetProtocol = ptr(managedProtocol("domainMetadata", "rowTracking"))
	}))
	check(5)
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(6, "a")}
		c.SetTableComment = ptr("c")
	}))
	check(6)
	// Metadata without a commit does not stamp.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) { c.SetProperties = &map[string]string{"k": "w"} }))
	check(6)
	// Backfill alongside does not disturb stamping.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(7, "a")}
		c.SetLatestBackfilled = ptr(int64(6))
		c.RemoveProperties = &[]string{"k"}
	}))
	check(7)
	wantVersions(t, e.reload(tb), 7)
}

// A request whose later step fails leaves the whole state untouched.
func TestAllOrNothing(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *env, tb *fsm.Table)
		mod   func(*fsm.UpdateTable)
		code  fsm.Code
	}{
		{"protocol breaks contract", nil, func(c *fsm.UpdateTable) {
			c.SetProperties = &map[string]string{"a": "b"}
			c.SetProtocol = &fsm.Protocol{MinReaderVersion: 3, MinWriterVersion: 7}
		}, fsm.CodeInvalid},
		{"partition column unknown", nil, func(c *fsm.UpdateTable) {
			c.SetColumns = ptr(testColumns())
			c.SetPartitionColumns = &[]string{"zz"}
		}, fsm.CodeInvalid},
		{"metadata then a commit gap", nil, func(c *fsm.UpdateTable) {
			c.SetProperties = &map[string]string{"a": "b"}
			c.RemoveDomainMetadata = &[]string{fsm.DomainRowTracking}
			c.SetTableComment = ptr("x")
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(5, "a")}
		}, fsm.CodeInvalid},
		{"metadata then a version conflict", nil, func(c *fsm.UpdateTable) {
			c.SetProperties = &map[string]string{"a": "b"}
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "b")}
		}, fsm.CodeCommitVersionConflict},
		{"metadata then the commit limit", func(e *env, tb *fsm.Table) { e.commitThrough(tb, 3, 10) }, func(c *fsm.UpdateTable) {
			c.SetColumns = ptr(testColumns())
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(11, "a")}
		}, fsm.CodeResourceExhausted},
		{"metadata and commit then a stale etag", nil, func(c *fsm.UpdateTable) {
			c.AssertETag = ptr("stale")
			c.SetProperties = &map[string]string{"a": "b"}
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "a")}
			c.SetLatestBackfilled = ptr(int64(2))
		}, fsm.CodeRequirementConflict},
		{"commit then a backfill beyond it", nil, func(c *fsm.UpdateTable) {
			c.SetProperties = &map[string]string{"a": "b"}
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "a")}
			c.SetLatestBackfilled = ptr(int64(3))
		}, fsm.CodeInvalid},
		{"uniform required by new properties", nil, func(c *fsm.UpdateTable) {
			c.SetProperties = &map[string]string{fsm.PropUniformFormats: "iceberg"}
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "a")}
		}, fsm.CodeInvalid},
		{"comment then snapshot version on managed", nil, func(c *fsm.UpdateTable) {
			c.SetTableComment = ptr("x")
			c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: 1, LastCommitTimestampMs: 1}
		}, fsm.CodeInvalid},
		{"purged version of unknown state", func(e *env, tb *fsm.Table) { e.ok(e.backfill(tb, 2)) }, func(c *fsm.UpdateTable) {
			c.SetProperties = &map[string]string{"a": "b"}
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")}
		}, fsm.CodeCommitStateUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tb := e.createManaged("unity", "default", "t")
			e.commitThrough(tb, 1, 2)
			if tc.setup != nil {
				tc.setup(e, tb)
			}
			before := e.reload(tb)
			beforeJSON := jsonOf(t, before)
			e.fail(e.upd(tb, tc.mod), tc.code, "")
			after := e.reload(tb)
			if after != before {
				t.Fatal("table pointer changed")
			}
			if jsonOf(t, after) != beforeJSON {
				t.Fatalf("stored table was mutated in place:\n%s\n%s", beforeJSON, jsonOf(t, after))
			}
		})
	}
}

// Results handed out are the stored values; a later apply never mutates a
// table that an earlier State still holds.
func TestOldStatesAreImmutable(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	part := e.createManagedWith("unity", "default", "p", func(c *fsm.CreateTable) {
		c.PartitionColumns = []string{"id"}
		c.Comment = ptr("old comment")
	})
	e.changed(e.upd(part, func(c *fsm.UpdateTable) {
		c.SetProperties = &map[string]string{fsm.PropUniformFormats: "iceberg"}
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a"), Uniform: &fsm.IcebergUniform{
			MetadataLocation: part.Location + "/m1.json", ConvertedDeltaVersion: 1, ConvertedDeltaTimestamp: 1}}
	}))
	e.changed(e.upd(part, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a"), Uniform: &fsm.IcebergUniform{
			MetadataLocation: part.Location + "/m2.json", ConvertedDeltaVersion: 2, ConvertedDeltaTimestamp: 1}}
	}))
	old := e.m.State()
	snap := func(st *fsm.State) string {
		return jsonOf(t, st.Tables("unity", "default", "", 0))
	}
	oldJSON := snap(old)
	e.commitThrough(tb, 1, 3)
	e.ok(e.backfill(tb, 3))
	e.ok(e.backfill(part, 1))
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.SetProperties = &map[string]string{"a": "b"}
		c.SetColumns = ptr(testColumns())
		c.SetPartitionColumns = &[]string{"id"}
		c.SetTableComment = ptr("x")
	}))
	e.changed(e.upd(part, func(c *fsm.UpdateTable) {
		c.SetPartitionColumns = &[]string{"amount"}
		c.SetTableComment = ptr("new comment")
		c.RemoveDomainMetadata = &[]string{fsm.DomainRowTracking}
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "a"), Uniform: &fsm.IcebergUniform{
			MetadataLocation: part.Location + "/m3.json", ConvertedDeltaVersion: 3, ConvertedDeltaTimestamp: 2}}
	}))
	e.changed(&fsm.RenameTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t", NewName: "u"})
	e.changed(&fsm.UpdateCatalog{Stamp: e.st(), Name: "unity", NewName: "uc", Comment: ptr("z")})
	if got := snap(old); got != oldJSON {
		t.Fatalf("old state's tables changed:\n%s\n%s", oldJSON, got)
	}
	if got, ok := old.Table("unity", "default", "t"); !ok || got != tb {
		t.Fatalf("old state's table pointer changed: %v", ok)
	}
	if c, _ := old.Catalog("unity"); c == nil || c.Comment != "Main catalog" {
		t.Fatalf("old state's catalog changed: %+v", c)
	}
	if _, ok := old.Catalog("uc"); ok {
		t.Fatal("old state sees the renamed catalog")
	}
	if tb.Commits != nil {
		t.Fatalf("result table of the create changed: commits %+v", tb.Commits)
	}
}
