package deltalog

import (
	"context"
	"fmt"
	"sort"
	"unsafe"
)

// replayChunk is how many commits are read ahead while replaying.
const replayChunk = 64

// catchUpCommits is how many commits a build replays on top of a cached
// snapshot in preference to reading a newer checkpoint.
const catchUpCommits = 32

// replay is the table state while a snapshot is built: the files of a
// cached snapshot it started from (base, sorted by key) and the changes
// since then, so that building on a large snapshot costs a merge, not a
// re-sort.
type replay struct {
	version  int64
	protocol *Protocol
	metadata *Metadata
	base     []AddFile
	files    map[string]*AddFile // added since base, by key
	dropped  map[string]bool     // keys removed since base
}

func newReplay(version int64) *replay {
	return &replay{version: version, files: map[string]*AddFile{}, dropped: map[string]bool{}}
}

// replayFrom starts from a cached snapshot.
func replayFrom(s *Snapshot) *replay {
	r := newReplay(s.Version)
	p, m := s.Protocol, s.Metadata
	r.protocol, r.metadata, r.base = &p, &m, s.Files
	return r
}

// addPart merges the rows of one checkpoint file.
func (r *replay) addPart(p *checkpointPart) {
	for _, a := range p.adds {
		r.put(a)
	}
	if p.metadata != nil {
		r.metadata = p.metadata
	}
	if p.protocol != nil {
		r.protocol = p.protocol
	}
}

// put adds or replaces a file. Like Delta's own log replay it clears
// dataChange, which checkpoints do not keep, so a snapshot does not
// depend on how it was built.
func (r *replay) put(a *AddFile) {
	a.DataChange = false
	r.files[a.Key()] = a
}

func (r *replay) remove(key string) {
	delete(r.files, key)
	if len(r.base) > 0 {
		r.dropped[key] = true
	}
}

// apply replays one commit.
func (r *replay) apply(version int64, lines []logLine) {
	for i := range lines {
		ll := &lines[i]
		switch {
		case ll.Add != nil:
			r.put(ll.Add)
		case ll.Remove != nil:
			r.remove(ll.Remove.Key())
		case ll.Metadata != nil:
			r.metadata = ll.Metadata
		case ll.Protocol != nil:
			r.protocol = ll.Protocol
		}
	}
	r.version = version
}

// snapshot freezes the state: the base files still live merged with the
// added ones, by key.
func (r *replay) snapshot() (*Snapshot, error) {
	if r.protocol == nil || r.metadata == nil {
		return nil, corruptf("version %d has no protocol or metaData", r.version)
	}
	keys := make([]string, 0, len(r.files))
	for k := range r.files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	files := make([]AddFile, 0, len(r.base)+len(keys))
	for i := range r.base {
		bk := r.base[i].Key()
		if r.dropped[bk] || r.files[bk] != nil {
			continue
		}
		for len(keys) > 0 && keys[0] < bk {
			files, keys = append(files, *r.files[keys[0]]), keys[1:]
		}
		files = append(files, r.base[i])
	}
	for _, k := range keys {
		files = append(files, *r.files[k])
	}
	return &Snapshot{Version: r.version, Protocol: *r.protocol, Metadata: *r.metadata, Files: files}, nil
}

// Snapshot returns the table's state at version: protocol, metadata and
// active files. It is ErrVersionUnavailable outside [Earliest, Latest].
// The result shares its files with the cache: do not modify them.
func (l *Log) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	if err := l.checkValid(version); err != nil {
		return nil, err
	}
	st, err := l.state(ctx, version)
	if err != nil {
		return nil, err
	}
	ts, err := l.Timestamp(ctx, version)
	if err != nil {
		return nil, err
	}
	out := *st
	out.Timestamp = ts
	return &out, nil
}

// state returns the cached snapshot at version (without its timestamp),
// building it once.
func (l *Log) state(ctx context.Context, version int64) (*Snapshot, error) {
	k := cacheKey{loc: l.table, kind: kindSnapshot, version: version}
	v, err := l.cache.do(ctx, k, l.versionSig(version), func() (any, int64, error) {
		s, err := l.build(ctx, version)
		if err != nil {
			return nil, 0, err
		}
		return s, s.approxSize(), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Snapshot), nil
}

// build reconstructs a version from a starting state and the commits
// after it.
func (l *Log) build(ctx context.Context, version int64) (*Snapshot, error) {
	r, err := l.start(ctx, version)
	if err != nil {
		return nil, err
	}
	if err := l.replayTo(ctx, r, version); err != nil {
		return nil, err
	}
	return r.snapshot()
}

// start picks the state to replay from: the newest cached snapshot not
// older than the newest usable checkpoint (or at most catchUpCommits
// behind version), else that checkpoint (falling
// back to older ones if it cannot be read), else the empty table before
// version 0.
func (l *Log) start(ctx context.Context, version int64) (*replay, error) {
	run := l.commitRunStart(version)
	cps := l.usableCheckpoints(version, run)
	from := int64(0)
	if len(cps) > 0 {
		from = cps[0].version
	}
	// A cached snapshot shortly before version beats reading a checkpoint
	// even when the checkpoint is newer.
	from = max(min(from, version-catchUpCommits), run-1)
	if base, ok := l.cache.snapshotBase(l.table, from, version, l.versionSig); ok {
		return replayFrom(base), nil
	}
	r, err := l.fromCheckpoint(ctx, cps)
	switch {
	case r != nil || isContextErr(err):
		return r, err
	case run == 0:
		return newReplay(-1), nil
	case err != nil:
		return nil, err
	}
	return nil, corruptf("version %d of %s: commit %d is missing and no checkpoint covers it", version, l.table, run-1)
}

// fromCheckpoint loads the first of cps that can be read; nil and the
// last error when none can.
func (l *Log) fromCheckpoint(ctx context.Context, cps []checkpoint) (*replay, error) {
	var lastErr error
	for _, cp := range cps {
		r, err := l.loadCheckpoint(ctx, cp)
		if err == nil || isContextErr(err) {
			return r, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// usableCheckpoints are the checkpoints at or below version that are
// followed by every commit up to version (run is commitRunStart).
func (l *Log) usableCheckpoints(version, run int64) []checkpoint {
	var out []checkpoint
	for _, cp := range l.checkpointsUpTo(version) {
		if cp.version+1 >= run {
			out = append(out, cp)
		}
	}
	return out
}

// commitRunStart returns the lowest c such that commits c..version all
// exist (version+1 when version itself has no commit).
func (l *Log) commitRunStart(version int64) int64 {
	c := version + 1
	for c > 0 && l.hasCommit(c-1) {
		c--
	}
	return c
}

// replayTo applies the commits after r's version up to version, reading
// them a chunk at a time concurrently.
func (l *Log) replayTo(ctx context.Context, r *replay, version int64) error {
	for from := r.version + 1; from <= version; from += replayChunk {
		to := min(from+replayChunk-1, version)
		commits := make([][]logLine, to-from+1)
		err := forEach(ctx, len(commits), func(ctx context.Context, i int) error {
			var err error
			commits[i], err = l.commitLines(ctx, from+int64(i))
			return err
		})
		if err != nil {
			return err
		}
		for i, lines := range commits {
			r.apply(from+int64(i), lines)
		}
	}
	return nil
}

// commitLines reads and decodes one commit file.
func (l *Log) commitLines(ctx context.Context, version int64) ([]logLine, error) {
	f, ok := l.commits[version]
	if !ok {
		return nil, corruptf("commit %d of %s is missing", version, l.table)
	}
	data, err := l.read(ctx, f.loc)
	if err != nil {
		return nil, err
	}
	lines, err := parseLines(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.loc, err)
	}
	return lines, nil
}

// Size estimates, in bytes, for the cache bound.
const (
	addFileBytes  = int64(unsafe.Sizeof(AddFile{})) + 64 // struct, key and map slot
	mapEntryBytes = 96                                   // a map entry with short key and value
)

// approxSize estimates the memory a snapshot holds.
func (s *Snapshot) approxSize() int64 {
	n := int64(unsafe.Sizeof(*s)) + int64(len(s.Metadata.SchemaString))
	n += strMapSize(s.Metadata.Configuration) + strMapSize(s.Metadata.Format.Options)
	for i := range s.Files {
		n += s.Files[i].approxSize()
	}
	return n
}

func (a *AddFile) approxSize() int64 {
	n := addFileBytes + int64(2*len(a.Path)+len(a.Stats)+len(a.ClusteringProvider))
	// Partition values and tags: an estimate per entry, without walking
	// the maps (this runs for every file of every cached snapshot).
	n += int64(len(a.PartitionValues)+len(a.Tags)) * mapEntryBytes
	if dv := a.DeletionVector; dv != nil {
		n += int64(unsafe.Sizeof(*dv)) + int64(2*len(dv.PathOrInlineDv))
	}
	return n
}

func strMapSize(m map[string]string) int64 {
	var n int64
	for k, v := range m {
		n += 48 + int64(len(k)+len(v))
	}
	return n
}
