package deltalog

import (
	"sort"
	"strconv"
	"strings"

	"github.com/raftcat/raftcat/storage"
)

// logFile is one file of the log as listed (or named by the catalog).
type logFile struct {
	loc    string
	size   int64
	mtime  int64 // ms
	staged bool  // a ratified commit read from its staged file
}

// sig identifies the file's content for cache validation.
func (f logFile) sig() string {
	if f.staged {
		return f.loc
	}
	return f.loc + "@" + strconv.FormatInt(f.size, 10) + "/" + strconv.FormatInt(f.mtime, 10)
}

// checkpoint kinds, in order of preference at one version.
const (
	cpClassic = iota
	cpV2
	cpMulti
)

// checkpoint is a complete checkpoint: one file, or every part of a
// multi-part one in part order.
type checkpoint struct {
	version int64
	kind    int
	parts   []logFile
}

// listing is what Open learns from one List of _delta_log/.
type listing struct {
	commits     map[int64]logFile
	checkpoints []checkpoint // complete ones, by version then preference
}

// multiKey groups the parts of one multi-part checkpoint.
type multiKey struct {
	version int64
	parts   int
}

// parseListing sorts the objects below logDir into commits and complete
// checkpoints, ignoring everything else.
func parseListing(logDir string, objs []storage.ObjectInfo) listing {
	l := listing{commits: map[int64]logFile{}}
	multi := map[multiKey]map[int]logFile{}
	for _, o := range objs {
		name, ok := strings.CutPrefix(o.Location, logDir)
		if !ok || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
			continue
		}
		f := logFile{loc: o.Location, size: o.Size, mtime: o.ModTime.UnixMilli()}
		l.add(name, f, multi)
	}
	l.addMultiParts(multi)
	sort.Slice(l.checkpoints, func(i, j int) bool {
		a, b := l.checkpoints[i], l.checkpoints[j]
		if a.version != b.version {
			return a.version < b.version
		}
		return a.kind < b.kind
	})
	return l
}

// add files one object by its name.
func (l *listing) add(name string, f logFile, multi map[multiKey]map[int]logFile) {
	v, rest, ok := splitVersion(name)
	if !ok {
		return
	}
	if rest == ".json" {
		l.commits[v] = f
		return
	}
	kind, part, parts, ok := checkpointName(rest)
	switch {
	case !ok:
	case kind == cpMulti:
		k := multiKey{v, parts}
		if multi[k] == nil {
			multi[k] = map[int]logFile{}
		}
		multi[k][part] = f
	default:
		l.checkpoints = append(l.checkpoints, checkpoint{version: v, kind: kind, parts: []logFile{f}})
	}
}

// addMultiParts keeps the multi-part checkpoints that have every part.
func (l *listing) addMultiParts(multi map[multiKey]map[int]logFile) {
	for k, got := range multi {
		if len(got) != k.parts {
			continue
		}
		cp := checkpoint{version: k.version, kind: cpMulti}
		for i := 1; i <= k.parts; i++ {
			cp.parts = append(cp.parts, got[i])
		}
		l.checkpoints = append(l.checkpoints, cp)
	}
}

// splitVersion splits a 20-digit version prefix from a file name.
func splitVersion(name string) (int64, string, bool) {
	if len(name) < 21 || !allDigits(name[:20]) {
		return 0, "", false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	return v, name[20:], err == nil
}

// checkpointName classifies what follows a checkpoint's version:
// ".checkpoint.parquet", ".checkpoint.<part>.<parts>.parquet" or
// ".checkpoint.<uuid>.json|parquet".
func checkpointName(rest string) (kind, part, parts int, ok bool) {
	mid, ok := strings.CutPrefix(rest, ".checkpoint.")
	if !ok {
		return 0, 0, 0, false
	}
	if mid == "parquet" {
		return cpClassic, 0, 0, true
	}
	if part, parts, ok := multiPart(mid); ok {
		return cpMulti, part, parts, true
	}
	id, ext, found := strings.Cut(mid, ".")
	if !found || id == "" || (ext != "json" && ext != "parquet") {
		return 0, 0, 0, false
	}
	return cpV2, 0, 0, true
}

// multiPart parses "<10 digits>.<10 digits>.parquet".
func multiPart(mid string) (part, parts int, ok bool) {
	if len(mid) != 29 || mid[10] != '.' || mid[21:] != ".parquet" || !allDigits(mid[:10]) || !allDigits(mid[11:21]) {
		return 0, 0, false
	}
	part, _ = strconv.Atoi(mid[:10])
	parts, _ = strconv.Atoi(mid[11:21])
	return part, parts, part >= 1 && part <= parts
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
