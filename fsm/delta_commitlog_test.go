package fsm_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// UC Delta case 54: the first commit of a fresh table is v1, and it is data only.
func TestFirstCommit(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	res := e.changed(e.addCommit(tb, 1))
	got := e.reload(tb)
	if res.Table != got {
		t.Fatal("result is not the stored table")
	}
	wantVersions(t, got, 1)
	if got.LatestVersion() != 1 || !reflect.DeepEqual(got.Commits, []fsm.Commit{commitOf(1, "a")}) {
		t.Fatalf("commits = %+v", got.Commits)
	}
	if got.ETag() != tb.ETag() || got.UpdatedAt != tb.UpdatedAt || got.MetaIndex != tb.MetaIndex {
		t.Fatalf("data-only commit changed etag/updated-time: %+v", got)
	}
	if got.Properties[fsm.PropLastUpdate] != "0" {
		t.Fatalf("data-only commit stamped %s=%s", fsm.PropLastUpdate, got.Properties[fsm.PropLastUpdate])
	}
}

// raftcat requires the first commit after create to be version 1.
func TestFirstCommitMustBeOne(t *testing.T) {
	for _, v := range []int64{0, 2, 5} {
		e := newEnv(t)
		tb := e.createManaged("unity", "default", "t")
		e.fail(e.addCommit(tb, v), fsm.CodeInvalid,
			fmt.Sprintf("Commit version must be the next version after the latest commit 0, but got %d", v))
	}
}

// A commit that arrives flagged as backfilled is stored as an ordinary
// unbackfilled commit.
func TestCommitBackfilledFlagIgnored(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	for v := int64(1); v <= 2; v++ {
		e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
			cm := commitOf(v, "a")
			cm.Backfilled = true
			c.AddCommit = &fsm.AddCommit{Commit: cm}
		}))
	}
	wantVersions(t, e.reload(tb), 2, 1)
}

// Replays, conflicts and gaps of tracked versions.
func TestReplayConflictAndGap(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.changed(e.addCommit(tb, 1))
	before := e.reload(tb)

	// UC Delta case 55: identical replay of v1 is a no-op answering the current table.
	res := e.noop(e.addCommit(tb, 1))
	if res.Table != before {
		t.Fatal("replay did not answer with the current table")
	}
	// A replay differing only in other commit fields is still a replay.
	e.noop(e.upd(tb, func(c *fsm.UpdateTable) {
		cm := commitOf(1, "a")
		cm.FileSize, cm.Timestamp = 1, 2
		c.AddCommit = &fsm.AddCommit{Commit: cm}
	}))
	// UC Delta case 56: another file for v1.
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "b")} }),
		fsm.CodeCommitVersionConflict,
		"Commit version already accepted. Version 1 was accepted with commit file "+commitFile(1, "a")+", but the request carried "+commitFile(1, "b")+".")
	// UC Delta case 57: a gap.
	e.fail(e.addCommit(tb, 3), fsm.CodeInvalid, "Commit version must be the next version after the latest commit 1, but got 3")
	if got := e.reload(tb); got != before {
		t.Fatal("table changed")
	}

	// UC Delta case 58: with v1..v3 tracked, replays of v1 and v2 are no-ops; v2 with
	// another name conflicts.
	e.commitThrough(tb, 2, 3)
	for _, v := range []int64{1, 2, 3} {
		e.noop(e.addCommit(tb, v))
	}
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "b")} }),
		fsm.CodeCommitVersionConflict, "already accepted")
	got := e.reload(tb)
	wantVersions(t, got, 3, 2, 1)
	if got.LatestVersion() != 3 {
		t.Fatalf("latest = %d", got.LatestVersion())
	}
}

// UC Delta case 71 and the limit arithmetic around it.
func TestUnbackfilledLimit(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, fsm.MaxUnbackfilledCommits)
	if fsm.MaxUnbackfilledCommits != 10 {
		t.Fatalf("MaxUnbackfilledCommits = %d, UC uses 10", fsm.MaxUnbackfilledCommits)
	}
	e.fail(e.addCommit(tb, 11), fsm.CodeResourceExhausted, "Max number of commits per table reached: "+tb.ID)
	// A backfill below the oldest tracked version does not help.
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(11, "a")}
		c.SetLatestBackfilled = ptr(int64(0))
	}), fsm.CodeResourceExhausted, "Max number of commits")
	// v6 + backfill 6 with last 5 (on another table) is the B > last rule.
	e2 := newEnv(t)
	tb2 := e2.createManaged("unity", "default", "t")
	e2.commitThrough(tb2, 1, 5)
	e2.fail(e2.upd(tb2, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(6, "a")}
		c.SetLatestBackfilled = ptr(int64(6))
	}), fsm.CodeInvalid, "Latest backfilled version 6 cannot be greater than the last commit version = 5")

	// v11 + backfill 6 fits and drops 1..6.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(11, "a")}
		c.SetLatestBackfilled = ptr(int64(6))
	}))
	got := e.reload(tb)
	wantVersions(t, got, 11, 10, 9, 8, 7)
	if got.ETag() != tb.ETag() || got.UpdatedAt != tb.UpdatedAt {
		t.Fatal("commit + backfill changed the etag")
	}
	// With 7..11 tracked (5 unbackfilled), versions up to 16 fit, 17 not.
	e.commitThrough(tb, 12, 16)
	e.fail(e.addCommit(tb, 17), fsm.CodeResourceExhausted, "Max number of commits")
	// Exactly at the limit with the backfill report in the same request:
	// backfilling through 7 leaves room for 17.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(17, "a")}
		c.SetLatestBackfilled = ptr(int64(7))
	}))
	wantVersions(t, e.reload(tb), 17, 16, 15, 14, 13, 12, 11, 10, 9, 8)
}

func TestBackfillOnly(t *testing.T) {
	cases := []struct {
		name    string
		b       int64
		want    []int64 // unbackfilled after, newest first
		errCode fsm.Code
		errMsg  string
	}{
		{name: "below first", b: 0, want: []int64{3, 2, 1}}, // UC Delta case 73
		{name: "first", b: 1, want: []int64{3, 2}},
		{name: "middle", b: 2, want: []int64{3}},
		{name: "last leaves a marker", b: 3, want: []int64{}},
		{name: "beyond last", b: 5, errCode: fsm.CodeInvalid, errMsg: "Should not backfill version 5 while the last version committed is 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tb := e.createManaged("unity", "default", "t")
			e.commitThrough(tb, 1, 3)
			before := e.reload(tb)
			if tc.errCode != 0 {
				e.fail(e.backfill(tb, tc.b), tc.errCode, tc.errMsg)
				return
			}
			e.ok(e.backfill(tb, tc.b))
			got := e.reload(tb)
			wantVersions(t, got, tc.want...)
			if got.LatestVersion() != 3 {
				t.Fatalf("latest = %d after backfill %d", got.LatestVersion(), tc.b)
			}
			if got.ETag() != before.ETag() || got.UpdatedAt != before.UpdatedAt || got.MetaIndex != before.MetaIndex {
				t.Fatal("backfill changed the etag or updated-time")
			}
			if !reflect.DeepEqual(got.Properties, before.Properties) {
				t.Fatal("backfill changed properties")
			}
			// Backfill is idempotent.
			e.ok(e.backfill(tb, tc.b))
			wantVersions(t, e.reload(tb), tc.want...)
		})
	}
}

// UC Delta case 67.
func TestBackfillEmptyLog(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.fail(e.backfill(tb, 1), fsm.CodeInvalid, "Backfill request requires a prior commit; the table's commit log is empty.")
	e.fail(e.backfill(tb, 0), fsm.CodeInvalid, "Backfill request requires a prior commit")
	e.changed(e.addCommit(tb, 1))
	e.fail(e.backfill(tb, 5), fsm.CodeInvalid, "Should not backfill version 5")
}

// UC Delta case 66: a backfill-only request after v1 publishes everything,
// keeps the latest version and leaves the etag and updated-time alone.
func TestBackfillOnlyAfterFirstCommit(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.changed(e.addCommit(tb, 1))
	before := e.reload(tb)
	e.ok(e.backfill(tb, 1))
	got := e.reload(tb)
	wantVersions(t, got)
	if got.LatestVersion() != 1 {
		t.Fatalf("latest = %d, want 1", got.LatestVersion())
	}
	if got.ETag() != before.ETag() || got.UpdatedAt != before.UpdatedAt || got.MetaIndex != before.MetaIndex {
		t.Fatal("backfill changed the etag or updated-time")
	}
	if !reflect.DeepEqual(got.Properties, before.Properties) {
		t.Fatal("backfill changed properties")
	}
}

// UC Delta case 73: after a partial backfill, reporting a version below the
// oldest tracked one changes nothing.
func TestBackfillBelowOldestTracked(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, 3)
	e.ok(e.backfill(tb, 2))
	before := jsonOf(t, e.reload(tb))
	for _, b := range []int64{1, 2} {
		e.ok(e.backfill(tb, b))
		if got := jsonOf(t, e.reload(tb)); got != before {
			t.Fatalf("backfill %d below the oldest tracked version changed the table:\n%s\n%s", b, before, got)
		}
	}
	wantVersions(t, e.reload(tb), 3)
}

// UC Delta case 32: after a full backfill the latest version survives and
// the log continues from it.
func TestBackfillMarker(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, 2)
	wantVersions(t, e.reload(tb), 2, 1)
	e.ok(e.backfill(tb, 1))
	wantVersions(t, e.reload(tb), 2)
	e.ok(e.backfill(tb, 2))
	got := e.reload(tb)
	wantVersions(t, got)
	if got.LatestVersion() != 2 {
		t.Fatalf("latest after full backfill = %d, want 2", got.LatestVersion())
	}
	// The marker still recognises replays and conflicts of its version.
	e.noop(e.addCommit(tb, 2))
	e.fail(e.upd(tb, func(c *fsm.UpdateTable) { c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "b")} }),
		fsm.CodeCommitVersionConflict, "already accepted")
	// Versions below the marker are purged.
	e.fail(e.addCommit(tb, 1), fsm.CodeCommitStateUnknown, "retry")
	// The next version is 3, and gaps are still refused.
	e.fail(e.addCommit(tb, 4), fsm.CodeInvalid, "after the latest commit 2, but got 4")
	// With everything published, ten new commits fit and the eleventh not.
	e.commitThrough(tb, 3, 12)
	wantVersions(t, e.reload(tb), 12, 11, 10, 9, 8, 7, 6, 5, 4, 3)
	e.fail(e.addCommit(tb, 13), fsm.CodeResourceExhausted, "Max number of commits")
	// Backfill to last again: marker at 12, nothing unbackfilled.
	e.ok(e.backfill(tb, 12))
	got = e.reload(tb)
	wantVersions(t, got)
	if got.LatestVersion() != 12 {
		t.Fatalf("latest = %d", got.LatestVersion())
	}
	// A commit with a backfill through the marker drops it.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(13, "a")}
		c.SetLatestBackfilled = ptr(int64(12))
	}))
	got = e.reload(tb)
	wantVersions(t, got, 13)
	if len(got.Commits) != 1 || got.Commits[0].Version != 13 {
		t.Fatalf("tracked commits = %+v", got.Commits)
	}
	if _, _, _, n := e.m.State().Counts(); n != 1 {
		t.Fatalf("Counts commits = %d", n)
	}
}

// A backfill to the newest version keeps the marker's data intact.
func TestBackfillMarkerKeepsCommit(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, 3)
	e.ok(e.backfill(tb, 3))
	got := e.reload(tb)
	if len(got.Commits) != 1 {
		t.Fatalf("tracked commits = %+v", got.Commits)
	}
	want := commitOf(3, "a")
	want.Backfilled = true
	if got.Commits[0] != want {
		t.Fatalf("marker = %+v, want %+v", got.Commits[0], want)
	}
}

// UC Delta case 61: a commit carrying a backfill of the previous version.
func TestCommitWithBackfill(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.changed(e.addCommit(tb, 1))
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a")}
		c.SetLatestBackfilled = ptr(int64(1))
	}))
	got := e.reload(tb)
	wantVersions(t, got, 2)
	if got.UpdatedAt != tb.UpdatedAt || got.ETag() != tb.ETag() {
		t.Fatal("commit + backfill changed updated-time or etag")
	}
	// A backfill below the oldest tracked version alongside a commit drops nothing.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "a")}
		c.SetLatestBackfilled = ptr(int64(1))
	}))
	wantVersions(t, e.reload(tb), 3, 2)
	// A backfill of the previous last never drops the new commit.
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(4, "a")}
		c.SetLatestBackfilled = ptr(int64(3))
	}))
	got = e.reload(tb)
	wantVersions(t, got, 4)
	if got.LatestVersion() != 4 {
		t.Fatalf("latest = %d", got.LatestVersion())
	}
}

// UC Delta case 72: versions purged by backfill are decided by the storage verdict.
func TestPurgedVersionReplay(t *testing.T) {
	setup := func(t *testing.T) (*env, *fsm.Table) {
		e := newEnv(t)
		tb := e.createManaged("unity", "default", "t")
		e.commitThrough(tb, 1, 3)
		e.ok(e.backfill(tb, 2))
		wantVersions(t, e.reload(tb), 3)
		return e, tb
	}
	purged := func(e *env, tb *fsm.Table, v int64, verdict string) *fsm.UpdateTable {
		return e.upd(tb, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(v, "a"), PurgedReplay: verdict}
		})
	}
	cases := []struct {
		verdict string
		code    fsm.Code // 0: NoOp
		msg     string
	}{
		{fsm.ReplayIdentical, 0, ""},
		{fsm.ReplayDifferent, fsm.CodeCommitVersionConflict, "Commit version already accepted. Version 2 is already published."},
		{fsm.ReplayUnknown, fsm.CodeCommitStateUnknown, "retry the request"},
		{"", fsm.CodeCommitStateUnknown, "Could not determine whether commit version 2 is a replay"},
		{"bogus", fsm.CodeCommitStateUnknown, "retry"},
	}
	for _, tc := range cases {
		t.Run("verdict="+tc.verdict, func(t *testing.T) {
			e, tb := setup(t)
			before := e.reload(tb)
			if tc.code == 0 {
				res := e.noop(purged(e, tb, 2, tc.verdict))
				if res.Table != before {
					t.Fatal("purged replay did not answer with the current table")
				}
				e.noop(purged(e, tb, 1, tc.verdict))
				return
			}
			err := e.fail(purged(e, tb, 2, tc.verdict), tc.code, tc.msg)
			if tc.code == fsm.CodeCommitStateUnknown && !strings.Contains(err.Message, before.Location) {
				t.Fatalf("message %q does not name the table location", err.Message)
			}
		})
	}
	// The verdict only applies below the oldest tracked version: a tracked
	// version is decided by file name whatever the verdict says.
	t.Run("tracked version ignores verdict", func(t *testing.T) {
		e, tb := setup(t)
		e.noop(purged(e, tb, 3, fsm.ReplayDifferent))
		e.fail(e.upd(tb, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(3, "b"), PurgedReplay: fsm.ReplayIdentical}
		}), fsm.CodeCommitVersionConflict, "was accepted with commit file")
	})
	// A purged replay ignores everything else in the request.
	t.Run("identical replay applies nothing", func(t *testing.T) {
		e, tb := setup(t)
		e.noop(e.upd(tb, func(c *fsm.UpdateTable) {
			c.AssertETag = ptr("stale")
			c.SetProperties = &map[string]string{"x": "y"}
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(2, "a"), PurgedReplay: fsm.ReplayIdentical}
			c.SetLatestBackfilled = ptr(int64(3))
		}))
		got := e.reload(tb)
		if _, ok := got.Properties["x"]; ok {
			t.Fatal("replay applied set-properties")
		}
		wantVersions(t, got, 3)
	})
}

// UC Delta case 64 and the backfill counterpart.
func TestCommitActionsRequireManaged(t *testing.T) {
	e := newEnv(t)
	ext := e.createExternal("unity", "default", "ext")
	const msg = "add-commit and set-latest-backfilled-version require a MANAGED Delta table."
	e.fail(e.addCommit(ext, 1), fsm.CodeInvalid, msg)
	e.fail(e.backfill(ext, 1), fsm.CodeInvalid, msg)
	e.fail(e.upd(ext, func(c *fsm.UpdateTable) {
		c.SetProperties = &map[string]string{"a": "b"}
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")}
	}), fsm.CodeInvalid, msg)
	if got := e.reload(ext); got.LatestVersion() != 0 || got.Properties["a"] != "" {
		t.Fatalf("external table changed: %+v", got)
	}
}

// UniForm metadata on commits.
func TestUniformCommits(t *testing.T) {
	uniform := func(loc string, v int64) *fsm.IcebergUniform {
		return &fsm.IcebergUniform{MetadataLocation: loc, ConvertedDeltaVersion: v, ConvertedDeltaTimestamp: baseTime + v}
	}
	withUniform := func(e *env, tb *fsm.Table, v int64, u *fsm.IcebergUniform, props map[string]string) *fsm.UpdateTable {
		return e.upd(tb, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(v, "a"), Uniform: u}
			if props != nil {
				c.SetProperties = &props
			}
		})
	}
	enable := map[string]string{fsm.PropUniformFormats: "delta, ICEBERG"}

	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	// UC Delta case 65
	e.fail(withUniform(e, tb, 1, uniform(tb.Location+"/_uniform/v1.json", 2), enable), fsm.CodeInvalid,
		"uniform.iceberg.converted-delta-version (2) must equal commit version (1)")
	// UC Delta case 68
	e.fail(withUniform(e, tb, 1, uniform("s3://elsewhere/_uniform/v1.json", 1), enable), fsm.CodeInvalid, "must be a subpath")
	// The table location itself and a sibling sharing its prefix are not under it.
	e.fail(withUniform(e, tb, 1, uniform(tb.Location, 1), enable), fsm.CodeInvalid, "must be a subpath")
	e.fail(withUniform(e, tb, 1, uniform(tb.Location+"x/v1.json", 1), enable), fsm.CodeInvalid, "must be a subpath")
	e.fail(withUniform(e, tb, 1, uniform(tb.Location+"/_uniform/v1.json", 1), nil), fsm.CodeInvalid,
		"Uniform metadata must not be set unless 'delta.universalFormat.enabledFormats' includes 'iceberg'.")
	e.fail(withUniform(e, tb, 1, nil, enable), fsm.CodeInvalid,
		"Uniform metadata must be set when 'delta.universalFormat.enabledFormats' includes 'iceberg'.")

	res := e.changed(withUniform(e, tb, 1, uniform(tb.Location+"/_uniform/v1.json", 1), enable))
	got := res.Table
	if got.Uniform == nil || got.Uniform.MetadataLocation != tb.Location+"/_uniform/v1.json" || got.Uniform.ConvertedDeltaVersion != 1 {
		t.Fatalf("uniform = %+v", got.Uniform)
	}
	if got.ETag() == tb.ETag() || got.Properties[fsm.PropLastUpdate] != "1" {
		t.Fatalf("uniform commit: etag changed %v, lastUpdateVersion %s", got.ETag() != tb.ETag(), got.Properties[fsm.PropLastUpdate])
	}
	// Once enabled, a commit without set-properties must still carry uniform.
	e.fail(e.addCommit(tb, 2), fsm.CodeInvalid, "Uniform metadata must be set when")
	// A uniform-only commit (no other metadata) is a metadata change.
	res = e.changed(withUniform(e, tb, 2, uniform(tb.Location+"/_uniform/v2.json", 2), nil))
	if res.Table.ETag() == got.ETag() || res.Table.Uniform.ConvertedDeltaVersion != 2 ||
		res.Table.Properties[fsm.PropLastUpdate] != "2" || res.Table.Properties[fsm.PropLastCommitTs] != fmt.Sprint(commitOf(2, "a").Timestamp) {
		t.Fatalf("uniform-only commit = %+v", res.Table)
	}
}

// On an empty log a backfill report alongside the first commit is
// ignored, as in the reference: v1 stays listed.
func TestFirstCommitIgnoresBackfill(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
		c.AddCommit = &fsm.AddCommit{Commit: commitOf(1, "a")}
		c.SetLatestBackfilled = ptr(int64(1))
	}))
	got := e.reload(tb)
	wantVersions(t, got, 1)
	if got.LatestVersion() != 1 {
		t.Fatalf("latest = %d", got.LatestVersion())
	}
}
