package deltalog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Table properties that enable in-commit timestamps.
const (
	propICTEnabled = "delta.enableInCommitTimestamps"
	propICTVersion = "delta.inCommitTimestampEnablementVersion"
)

// ictHeadBytes is how much of a commit is read first for its in-commit
// timestamp (the first line, commitInfo).
const ictHeadBytes = 16 << 10

// ictConfig says which versions carry in-commit timestamps.
type ictConfig struct {
	enabled bool
	from    int64 // the enablement version; 0 when enabled at creation
}

func ictFrom(md *Metadata) ictConfig {
	if !strings.EqualFold(md.Configuration[propICTEnabled], "true") {
		return ictConfig{}
	}
	from, err := strconv.ParseInt(md.Configuration[propICTVersion], 10, 64)
	if err != nil {
		from = 0
	}
	return ictConfig{enabled: true, from: from}
}

func (c ictConfig) covers(v int64) bool { return c.enabled && v >= c.from }

// ict returns the in-commit timestamp settings of the latest version. The
// enablement version is set when the feature is turned on and kept while
// it stays on, so every version from it to Latest has the feature
// enabled; older versions use file times, as Delta's own history does.
func (l *Log) ict(ctx context.Context) (ictConfig, error) {
	l.ictMu.Lock()
	cfg := l.ictCfg
	l.ictMu.Unlock()
	if cfg != nil {
		return *cfg, nil
	}
	st, err := l.state(ctx, l.latest)
	if err != nil {
		return ictConfig{}, err
	}
	c := ictFrom(&st.Metadata)
	l.ictMu.Lock()
	l.ictCfg = &c
	l.ictMu.Unlock()
	return c, nil
}

// fileTimestamps gives every listed version its file time (the catalog's
// time for a staged commit), made monotonic across consecutive versions.
func (l *Log) fileTimestamps() map[int64]int64 {
	out := map[int64]int64{}
	prevV, prevTS := int64(-2), int64(0)
	for _, v := range l.knownVersions() {
		t := l.fileTime(v)
		if prevV == v-1 && t <= prevTS {
			t = prevTS + 1
		}
		out[v] = t
		prevV, prevTS = v, t
	}
	return out
}

func (l *Log) fileTime(v int64) int64 {
	if f, ok := l.commits[v]; ok {
		return f.mtime
	}
	cp, _ := l.checkpointAt(v)
	return cp.parts[0].mtime
}

// Timestamp returns the commit timestamp of a version (ms since the
// epoch): its in-commit timestamp when enabled for it, else its file time
// made monotonic.
func (l *Log) Timestamp(ctx context.Context, version int64) (int64, error) {
	fts, ok := l.fileTS[version]
	if !ok {
		return 0, unavailablef("version %d of %s has no commit file", version, l.table)
	}
	cfg, err := l.ict(ctx)
	if err != nil || !cfg.covers(version) || !l.hasCommit(version) {
		return fts, err
	}
	return l.cachedICT(ctx, version, fts)
}

// cachedICT returns a version's in-commit timestamp (fallback when the
// commit has none), reading it once.
func (l *Log) cachedICT(ctx context.Context, version, fallback int64) (int64, error) {
	k := cacheKey{loc: l.table, kind: kindICT, version: version}
	v, err := l.cache.do(ctx, k, l.versionSig(version), func() (any, int64, error) {
		ts, ok, err := l.readICT(ctx, version)
		if !ok {
			ts = fallback
		}
		return ts, 64 + int64(len(l.table)), err
	})
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
}

// readICT reads commitInfo.inCommitTimestamp from a commit's first line,
// reading only the head of the file when the store allows it.
func (l *Log) readICT(ctx context.Context, version int64) (int64, bool, error) {
	f := l.commits[version]
	if rr, ok := l.store.(rangeReader); ok && f.size > ictHeadBytes {
		head, err := rr.ReadRange(ctx, f.loc, 0, ictHeadBytes)
		if err == nil {
			if ts, ok, complete := firstLineICT(head, false); complete {
				return ts, ok, nil
			}
		}
	}
	data, err := l.read(ctx, f.loc)
	if err != nil {
		return 0, false, err
	}
	ts, ok, _ := firstLineICT(data, true)
	return ts, ok, nil
}

// timeline returns the commit timestamps of Earliest..Latest, reading the
// in-commit timestamps it needs concurrently.
func (l *Log) timeline(ctx context.Context) ([]int64, error) {
	cfg, err := l.ict(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]int64, l.latest-l.earliest+1)
	var ict []int64
	for i := range out {
		v := l.earliest + int64(i)
		out[i] = l.fileTS[v]
		if cfg.covers(v) && l.hasCommit(v) {
			ict = append(ict, v)
		}
	}
	if len(ict) == 0 {
		return out, nil
	}
	return out, forEach(ctx, len(ict), func(ctx context.Context, i int) error {
		v := ict[i]
		ts, err := l.cachedICT(ctx, v, l.fileTS[v])
		out[v-l.earliest] = ts
		return err
	})
}

// VersionAt returns the latest version whose commit timestamp is <= ts
// (the version a time-travel query at ts reads). A ts before every commit
// or after the latest commit is ErrTimestampOutOfRange.
func (l *Log) VersionAt(ctx context.Context, ts int64) (int64, error) {
	tl, err := l.timeline(ctx)
	if err != nil {
		return 0, err
	}
	if ts > tl[len(tl)-1] {
		return 0, l.outOfRange(ts, tl)
	}
	for i := len(tl) - 1; i >= 0; i-- {
		if tl[i] <= ts {
			return l.earliest + int64(i), nil
		}
	}
	return 0, l.outOfRange(ts, tl)
}

// VersionAtOrAfter returns the earliest version whose commit timestamp is
// >= ts; Earliest for a ts before the first commit, and
// ErrTimestampOutOfRange for a ts after the latest commit.
func (l *Log) VersionAtOrAfter(ctx context.Context, ts int64) (int64, error) {
	tl, err := l.timeline(ctx)
	if err != nil {
		return 0, err
	}
	for i, t := range tl {
		if t >= ts {
			return l.earliest + int64(i), nil
		}
	}
	return 0, l.outOfRange(ts, tl)
}

func (l *Log) outOfRange(ts int64, tl []int64) error {
	return fmt.Errorf("%w: %d is outside the commits of %s (version %d at %d to version %d at %d)",
		ErrTimestampOutOfRange, ts, l.table, l.earliest, tl[0], l.latest, tl[len(tl)-1])
}
