package fsm

import "strings"

// MaxUnbackfilledCommits is how many ratified commits a table may hold
// before writers must report a backfill (UC's MAX_NUM_COMMITS_PER_TABLE).
const MaxUnbackfilledCommits = 10

// applyCommitActions runs add-commit and set-latest-backfilled-version
// against the table's commit log. replay is true when the request is a
// recognised re-send of an already ratified commit: then nothing of the
// request applies and the caller answers with the current state.
func applyCommitActions(tb *Table, c *UpdateTable) (replay bool, err *Error) {
	if c.AddCommit == nil && c.SetLatestBackfilled == nil {
		return false, nil
	}
	if tb.Type != TableManaged {
		return false, Invalidf("add-commit and set-latest-backfilled-version require a MANAGED Delta table.")
	}
	if c.AddCommit == nil {
		return false, backfill(tb, *c.SetLatestBackfilled)
	}
	if err := checkUniform(tb, c.AddCommit); err != nil {
		return false, err
	}
	return addCommit(tb, c.AddCommit, c.SetLatestBackfilled)
}

func checkUniform(tb *Table, ac *AddCommit) *Error {
	u, v := ac.Uniform, ac.Commit.Version
	if u != nil && u.ConvertedDeltaVersion != v {
		return Invalidf("uniform.iceberg.converted-delta-version (%d) must equal commit version (%d)", u.ConvertedDeltaVersion, v)
	}
	enabled := uniformEnabled(tb.Properties)
	if enabled && u == nil {
		return Invalidf("Uniform metadata must be set when '%s' includes 'iceberg'.", PropUniformFormats)
	}
	if !enabled && u != nil {
		return Invalidf("Uniform metadata must not be set unless '%s' includes 'iceberg'.", PropUniformFormats)
	}
	if u != nil && !strings.HasPrefix(u.MetadataLocation, strings.TrimRight(tb.Location, "/")+"/") {
		return Invalidf("uniform.iceberg.metadata-location ('%s') must be a subpath of the table location ('%s').", u.MetadataLocation, tb.Location)
	}
	if u != nil {
		cp := *u
		tb.Uniform = &cp
	}
	return nil
}

// addCommit ratifies version v = latest+1, recognises replays, enforces the
// unbackfilled-commit limit and applies an accompanying backfill report.
func addCommit(tb *Table, ac *AddCommit, backfilled *int64) (bool, *Error) {
	cm := ac.Commit
	cm.Backfilled = false
	v := cm.Version
	if len(tb.Commits) == 0 { // first commit after create
		if v != 1 {
			return false, Invalidf("Commit version must be the next version after the latest commit 0, but got %d", v)
		}
		tb.Commits = append(tb.Commits, cm)
		return false, nil
	}
	first, last := tb.Commits[0], tb.Commits[len(tb.Commits)-1]
	if v <= last.Version {
		return alreadyTaken(tb, ac, first.Version)
	}
	if v > last.Version+1 {
		return false, Invalidf("Commit version must be the next version after the latest commit %d, but got %d", last.Version, v)
	}
	if backfilled != nil && *backfilled > last.Version {
		return false, Invalidf("Latest backfilled version %d cannot be greater than the last commit version = %d", *backfilled, last.Version)
	}
	var published int64 // newest version known to be published
	switch {
	case last.Backfilled:
		published = last.Version
	case backfilled != nil && *backfilled >= first.Version:
		published = *backfilled
	case first.Backfilled:
		published = first.Version
	default:
		published = first.Version - 1
	}
	if v-published > MaxUnbackfilledCommits {
		return false, Errf(CodeResourceExhausted, "Max number of commits per table reached: %s", tb.ID)
	}
	tb.Commits = append(tb.Commits, cm)
	if backfilled != nil && *backfilled >= first.Version {
		dropThrough(tb, min(*backfilled, v-1))
	}
	return false, nil
}

// alreadyTaken decides a commit for a version that is already ratified:
// the same file is a replay, another file a conflict. Versions purged by
// backfill are decided by the storage verdict carried in the command.
func alreadyTaken(tb *Table, ac *AddCommit, first int64) (bool, *Error) {
	v, name := ac.Commit.Version, ac.Commit.FileName
	if v >= first {
		old := tb.Commits[v-first]
		if old.FileName == name {
			return true, nil
		}
		return false, Errf(CodeCommitVersionConflict, "Commit version already accepted. Version %d was accepted with commit file %s, but the request carried %s.", v, old.FileName, name)
	}
	switch ac.PurgedReplay {
	case ReplayIdentical:
		return true, nil
	case ReplayDifferent:
		return false, Errf(CodeCommitVersionConflict, "Commit version already accepted. Version %d is already published.", v)
	}
	return false, Errf(CodeCommitStateUnknown, "Could not determine whether commit version %d is a replay: unable to read the staged or published commit file for the table at %s; retry the request.", v, tb.Location)
}

// backfill records that versions up to b are published.
func backfill(tb *Table, b int64) *Error {
	if len(tb.Commits) == 0 {
		return Invalidf("Backfill request requires a prior commit; the table's commit log is empty.")
	}
	first, last := tb.Commits[0].Version, tb.Commits[len(tb.Commits)-1].Version
	if b > last {
		return Invalidf("Should not backfill version %d while the last version committed is %d", b, last)
	}
	if b < first {
		return nil
	}
	dropThrough(tb, min(b, last-1))
	if b == last {
		tb.Commits[len(tb.Commits)-1].Backfilled = true
	}
	return nil
}

// dropThrough removes tracked commits with version <= v (never the newest).
func dropThrough(tb *Table, v int64) {
	i := 0
	for i < len(tb.Commits)-1 && tb.Commits[i].Version <= v {
		i++
	}
	tb.Commits = append([]Commit(nil), tb.Commits[i:]...)
}
