package deltalog

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// checkpointsUpTo lists the complete checkpoints at or below v, newest
// first, in order of preference within a version.
func (l *Log) checkpointsUpTo(v int64) []checkpoint {
	k := sort.Search(len(l.cps), func(i int) bool { return l.cps[i].version > v })
	out := slices.Clone(l.cps[:k])
	slices.SortStableFunc(out, func(a, b checkpoint) int { return cmp.Compare(b.version, a.version) })
	return out
}

// loadCheckpoint reads a checkpoint (every part, and the sidecars a v2
// checkpoint points to) into a replay state at its version.
func (l *Log) loadCheckpoint(ctx context.Context, cp checkpoint) (*replay, error) {
	parts, err := l.readParts(ctx, cp.parts)
	if err != nil {
		return nil, err
	}
	var sidecars []logFile
	for _, p := range parts {
		for _, s := range p.sidecars {
			sidecars = append(sidecars, logFile{loc: l.sidecarLocation(s)})
		}
	}
	more, err := l.readParts(ctx, sidecars)
	if err != nil {
		return nil, err
	}
	r := newReplay(cp.version)
	for _, p := range append(parts, more...) {
		r.addPart(p)
	}
	return r, nil
}

// readParts reads checkpoint or sidecar files concurrently.
func (l *Log) readParts(ctx context.Context, files []logFile) ([]*checkpointPart, error) {
	out := make([]*checkpointPart, len(files))
	if len(files) == 0 {
		return out, nil
	}
	err := forEach(ctx, len(files), func(ctx context.Context, i int) error {
		p, err := l.readPart(ctx, files[i].loc)
		out[i] = p
		return err
	})
	return out, err
}

// readPart reads one checkpoint or sidecar file, JSON or Parquet.
func (l *Log) readPart(ctx context.Context, loc string) (*checkpointPart, error) {
	data, err := l.read(ctx, loc)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(loc, ".json") {
		return jsonPart(data, loc)
	}
	p, err := readParquetActions(ctx, data)
	if err != nil {
		return nil, corruptf("%s: %v", loc, err)
	}
	return p, nil
}

// jsonPart reads a v2 checkpoint (or sidecar) written as NDJSON.
func jsonPart(data []byte, loc string) (*checkpointPart, error) {
	lines, err := parseLines(data)
	if err != nil {
		return nil, corruptf("%s: %v", loc, err)
	}
	p := &checkpointPart{}
	for _, ll := range lines {
		switch {
		case ll.Add != nil:
			p.adds = append(p.adds, ll.Add)
		case ll.Metadata != nil:
			p.metadata = ll.Metadata
		case ll.Protocol != nil:
			p.protocol = ll.Protocol
		case ll.Sidecar != nil:
			p.sidecars = append(p.sidecars, ll.Sidecar.Path)
		}
	}
	return p, nil
}

// sidecarLocation resolves a sidecar path: absolute, or relative to
// _delta_log/_sidecars/.
func (l *Log) sidecarLocation(path string) string {
	if hasScheme(path) {
		return path
	}
	if dec, err := url.PathUnescape(path); err == nil {
		path = dec
	}
	return l.logDir + "_sidecars/" + path
}
