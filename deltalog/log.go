package deltalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/raftcat/raftcat/storage"
)

// Store is what reading a log needs; storage.ObjectStore satisfies it.
// Locations are full URLs such as
// file:///tmp/x/tbl/_delta_log/00000000000000000000.json or s3://b/t/….
type Store interface {
	// List returns every object whose location starts with prefix, in
	// lexical order.
	List(ctx context.Context, prefix string) ([]storage.ObjectInfo, error)
	// Read returns an object's content; storage.ErrNotFound when missing.
	Read(ctx context.Context, loc string) ([]byte, error)
}

// rangeReader is the optional ranged read of storage.ObjectStore, used to
// read only the head of a commit for its in-commit timestamp.
type rangeReader interface {
	ReadRange(ctx context.Context, loc string, off, n int64) ([]byte, error)
}

// Ratified is a commit a catalog ratified for a catalog-managed table. It
// may not be published in _delta_log/ yet: its content is then only in
// Location (<table>/_delta_log/_staged_commits/<v>.<uuid>.json).
type Ratified struct {
	Version   int64
	Location  string // full URL of the staged commit file
	Timestamp int64  // ms epoch, the catalog's commit timestamp
}

// Source names the table to read.
type Source struct {
	// Location is the table root URL (a trailing slash is ignored).
	Location string
	// Ratified, for a catalog-managed table, lists the catalog's tracked
	// commits in version order (possibly already published). Versions
	// above the newest published JSON commit are read from their staged
	// files; the latest version is then max(newest published, newest
	// ratified), and published commits and checkpoints newer than the
	// newest ratified version are ignored.
	Ratified []Ratified
	// Latest, when > 0, caps the visible versions (the catalog's latest
	// version): Log.Latest is then the newest version at or below it.
	// 0 and negative values mean unknown, so that the zero value of
	// Source does not hide every version but 0.
	Latest int64
}

// Log is a table's log as listed by Open: it knows the latest version and
// reads snapshots, commits and timestamps on demand. It is safe for
// concurrent use.
type Log struct {
	store    Store
	cache    *Cache
	table    string // table root, no trailing slash
	logDir   string // <table>/_delta_log/
	commits  map[int64]logFile
	cps      []checkpoint // complete, <= latest, by version
	latest   int64
	earliest int64
	fileTS   map[int64]int64 // monotonic file-time timestamps

	ictMu  sync.Mutex
	ictCfg *ictConfig
}

// privateCacheBytes bounds the cache of a Log opened without one.
const privateCacheBytes = 64 << 20

// Open lists <location>/_delta_log/ once (commits, checkpoints) and works
// out the latest and earliest readable versions. cache may be nil; the Log
// then caches for itself only.
func Open(ctx context.Context, store Store, cache *Cache, src Source) (*Log, error) {
	table := strings.TrimRight(src.Location, "/")
	if table == "" {
		return nil, errors.New("deltalog: empty table location")
	}
	if cache == nil {
		cache = NewCache(privateCacheBytes)
	}
	l := &Log{store: store, cache: cache, table: table, logDir: table + "/_delta_log/"}
	objs, err := store.List(ctx, l.logDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotDeltaTable, table, err)
	}
	if err != nil {
		return nil, fmt.Errorf("deltalog: list %s: %w", l.logDir, err)
	}
	if err := l.init(parseListing(l.logDir, objs), src); err != nil {
		return nil, err
	}
	return l, nil
}

// init applies the catalog's view to the listing and derives the version
// range.
func (l *Log) init(lst listing, src Source) error {
	l.commits = lst.commits
	l.cps = lst.checkpoints
	if err := l.applyRatified(src.Ratified); err != nil {
		return err
	}
	if src.Latest > 0 {
		l.dropAbove(src.Latest)
	}
	l.latest = l.newestVersion()
	if l.latest < 0 {
		return fmt.Errorf("%w: no commit or checkpoint in %s", ErrNotDeltaTable, l.logDir)
	}
	l.earliest = l.findEarliest()
	l.fileTS = l.fileTimestamps()
	return nil
}

// applyRatified ignores published files beyond the newest ratified
// version and adds the ratified commits that are not published.
func (l *Log) applyRatified(rs []Ratified) error {
	if len(rs) == 0 {
		return nil
	}
	rs = sortedRatified(rs)
	l.dropAbove(rs[len(rs)-1].Version)
	published := l.newestCommit()
	for _, r := range rs {
		if r.Version <= published {
			continue
		}
		if r.Location == "" {
			return fmt.Errorf("deltalog: ratified version %d has no staged location", r.Version)
		}
		l.commits[r.Version] = logFile{loc: r.Location, mtime: r.Timestamp, staged: true}
	}
	return nil
}

func sortedRatified(rs []Ratified) []Ratified {
	out := append([]Ratified(nil), rs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// dropAbove forgets commits and checkpoints newer than v.
func (l *Log) dropAbove(v int64) {
	for cv := range l.commits {
		if cv > v {
			delete(l.commits, cv)
		}
	}
	n := 0
	for _, cp := range l.cps {
		if cp.version <= v {
			l.cps[n] = cp
			n++
		}
	}
	l.cps = l.cps[:n]
}

// newestCommit is the newest commit version, -1 without any.
func (l *Log) newestCommit() int64 {
	newest := int64(-1)
	for v := range l.commits {
		newest = max(newest, v)
	}
	return newest
}

// newestVersion is the newest commit or checkpoint version, -1 without any.
func (l *Log) newestVersion() int64 {
	newest := l.newestCommit()
	if n := len(l.cps); n > 0 {
		newest = max(newest, l.cps[n-1].version)
	}
	return newest
}

// findEarliest returns the start of the run of reconstructable versions
// that ends at latest: a version is reconstructable when it has a
// checkpoint, or its commit and a reconstructable predecessor (or it is
// version 0). When latest itself is not reconstructable it returns latest,
// and building it reports the missing commit.
func (l *Log) findEarliest() int64 {
	runStart, prev, ok := int64(-1), int64(-1), false
	for _, v := range l.knownVersions() {
		okV := l.hasCheckpoint(v) || (l.hasCommit(v) && (v == 0 || (ok && prev == v-1)))
		if okV && !(ok && prev == v-1) {
			runStart = v
		}
		prev, ok = v, okV
	}
	if !ok || prev != l.latest {
		return l.latest
	}
	return runStart
}

// knownVersions lists every version with a commit or checkpoint, ascending.
func (l *Log) knownVersions() []int64 {
	seen := make(map[int64]bool, len(l.commits)+len(l.cps))
	vs := make([]int64, 0, len(l.commits)+len(l.cps))
	for v := range l.commits {
		seen[v] = true
		vs = append(vs, v)
	}
	for _, cp := range l.cps {
		if !seen[cp.version] {
			seen[cp.version] = true
			vs = append(vs, cp.version)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	return vs
}

func (l *Log) hasCommit(v int64) bool {
	_, ok := l.commits[v]
	return ok
}

func (l *Log) hasCheckpoint(v int64) bool {
	i := sort.Search(len(l.cps), func(i int) bool { return l.cps[i].version >= v })
	return i < len(l.cps) && l.cps[i].version == v
}

// Location returns the table root URL, without a trailing slash.
func (l *Log) Location() string { return l.table }

// Latest returns the latest version of the table.
func (l *Log) Latest() int64 { return l.latest }

// Earliest returns the oldest version that can be reconstructed such that
// every version from it to Latest can be.
func (l *Log) Earliest() int64 { return l.earliest }

// FileLocation returns the absolute URL of a path from the log: an
// absolute URI (file:, s3:, …) as it is, a relative one URL-decoded and
// joined to the table root (a path starting with "/" to the root of the
// table's bucket or filesystem).
func (l *Log) FileLocation(path string) string {
	if hasScheme(path) {
		return path
	}
	if dec, err := url.PathUnescape(path); err == nil {
		path = dec
	}
	if strings.HasPrefix(path, "/") {
		return l.storageRoot() + path
	}
	return l.table + "/" + path
}

// storageRoot is the table location's scheme and bucket (file:// for a
// local table).
func (l *Log) storageRoot() string {
	scheme, rest, ok := strings.Cut(l.table, "://")
	if !ok {
		return ""
	}
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host
}

// hasScheme reports whether s starts with a URI scheme of two or more
// characters (one letter would be a Windows drive).
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			return i >= 2
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return false
}

// versionSig identifies the file version v is read from, for the cache.
func (l *Log) versionSig(v int64) string {
	if f, ok := l.commits[v]; ok {
		return f.sig()
	}
	if cp, ok := l.checkpointAt(v); ok {
		return cp.parts[0].sig()
	}
	return ""
}

// checkpointAt returns the preferred complete checkpoint at exactly v.
func (l *Log) checkpointAt(v int64) (checkpoint, bool) {
	i := sort.Search(len(l.cps), func(i int) bool { return l.cps[i].version >= v })
	if i < len(l.cps) && l.cps[i].version == v {
		return l.cps[i], true
	}
	return checkpoint{}, false
}

// checkValid reports ErrVersionUnavailable outside [Earliest, Latest].
func (l *Log) checkValid(v int64) error {
	if v < l.earliest || v > l.latest {
		return unavailablef("version %d of %s (readable: %d to %d)", v, l.table, l.earliest, l.latest)
	}
	return nil
}
