package deltalog

import "context"

// Commit returns one version's actions in file order (from the published
// JSON commit, or the staged file of a ratified commit), with its commit
// timestamp. Versions without a commit file are ErrVersionUnavailable.
// The actions are freshly decoded and owned by the caller.
func (l *Log) Commit(ctx context.Context, version int64) (*Commit, error) {
	if version > l.latest || !l.hasCommit(version) {
		return nil, unavailablef("no commit %d in %s (latest %d)", version, l.table, l.latest)
	}
	lines, err := l.commitLines(ctx, version)
	if err != nil {
		return nil, err
	}
	c := &Commit{Version: version, Actions: make([]Action, 0, len(lines))}
	for i := range lines {
		a, ok, err := lines[i].action()
		if err != nil {
			return nil, err
		}
		if ok {
			c.Actions = append(c.Actions, a)
		}
	}
	c.Timestamp, err = l.commitTimestamp(ctx, version, lines)
	return c, err
}

// commitTimestamp is Timestamp for a commit whose lines are at hand.
func (l *Log) commitTimestamp(ctx context.Context, version int64, lines []logLine) (int64, error) {
	cfg, err := l.ict(ctx)
	if err != nil || !cfg.covers(version) {
		return l.fileTS[version], err
	}
	if len(lines) > 0 {
		if ts, ok := lines[0].inCommitTimestamp(); ok {
			return ts, nil
		}
	}
	return l.fileTS[version], nil
}
