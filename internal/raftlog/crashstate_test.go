package raftlog

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The states a crash could leave, in the model of what reaches the disk
// that the crash tests assume:
//   - a write to a file is on disk once a later sync of that file
//     succeeds, unless a sync of it failed in between (a failed sync may
//     drop the dirty pages and later syncs then report success for data
//     that never reached the disk, as Linux does);
//   - any other write may or may not be there, or only some of its 4 KiB
//     pages or 512-byte sectors, each whole;
//   - a change to a directory (a file made, renamed or removed, a
//     directory made) is on disk once a later sync of the directory
//     succeeds; the ones after the directory's last sync survive as a
//     prefix of them, in order.
// A file's data does not depend on its name surviving, nor a name on the
// file's data.

// crashPoint is the record up to a crash, with what it left unsynced.
type crashPoint struct {
	ops      []fsOp
	unsynced []int            // writes not known on disk, by position
	pending  map[string][]int // each directory's changes after its last sync
}

func crashAt(ops []fsOp) crashPoint {
	cp := crashPoint{ops: ops, pending: map[string][]int{}}
	for i, op := range ops {
		switch op.kind {
		case opWrite:
			if !cp.synced(i) {
				cp.unsynced = append(cp.unsynced, i)
			}
		case opCreate, opMkdir, opRename, opRemove:
			if !cp.dirSynced(i) {
				cp.pending[op.dir()] = append(cp.pending[op.dir()], i)
			}
		}
	}
	return cp
}

// synced reports whether the write at i is on disk: the first sync of
// its file after it succeeded.
func (cp crashPoint) synced(i int) bool {
	for _, op := range cp.ops[i+1:] {
		if op.kind == opSync && op.ino == cp.ops[i].ino {
			return !op.failed
		}
	}
	return false
}

// dirSynced reports whether the directory change at i is on disk.
func (cp crashPoint) dirSynced(i int) bool {
	for _, op := range cp.ops[i+1:] {
		if op.kind == opSyncDir && op.path == cp.ops[i].dir() {
			return true
		}
	}
	return false
}

// crashVariant is one way the crash left what was not synced: which
// unsynced writes reached the disk (all of each, or some pages), and
// how many of each directory's pending changes did.
type crashVariant struct {
	name string
	kept map[int]keptWrite // by position; absent: lost
	dirs map[string]int    // pending changes kept; absent: all of them
}

type keptWrite struct {
	grain int64          // 0: the whole write; else the page size
	pages map[int64]bool // with grain: the pages (file offset / grain) kept
}

// variants lists the ways a crash at cp could leave the files: every
// unsynced write lost or all kept, with each choice of how many pending
// directory changes survive; then, with every directory change kept,
// random subsets of the writes, and writes torn into some of their pages.
func (cp crashPoint) variants(rng *rand.Rand) []crashVariant {
	var vs []crashVariant
	for _, keepAll := range []bool{false, true} {
		if keepAll && len(cp.unsynced) == 0 {
			break
		}
		for _, dirs := range cp.dirChoices() {
			v := crashVariant{name: fmt.Sprintf("writes kept %v, directory changes %v", keepAll, dirs), kept: map[int]keptWrite{}, dirs: dirs}
			for _, i := range cp.unsynced {
				if keepAll {
					v.kept[i] = keptWrite{}
				}
			}
			vs = append(vs, v)
		}
	}
	if len(cp.unsynced) == 0 {
		return vs
	}
	for r := 0; r < 3; r++ {
		vs = append(vs, cp.randomSubset(rng))
	}
	for r := 0; r < 4; r++ {
		vs = append(vs, cp.torn(rng, []int64{4096, 512}[r%2], r < 2))
	}
	return vs
}

// dirChoices: all pending changes kept, none, and each prefix of one
// directory's with the others' all kept.
func (cp crashPoint) dirChoices() []map[string]int {
	if len(cp.pending) == 0 {
		return []map[string]int{nil}
	}
	choices := []map[string]int{nil, {}}
	for dir := range cp.pending {
		choices[1][dir] = 0
	}
	dirs := make([]string, 0, len(cp.pending))
	for dir := range cp.pending {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		for n := 1; n < len(cp.pending[dir]); n++ {
			choices = append(choices, map[string]int{dir: n})
		}
	}
	return choices
}

func (cp crashPoint) randomSubset(rng *rand.Rand) crashVariant {
	v := crashVariant{name: "a random subset of the writes", kept: map[int]keptWrite{}}
	for _, i := range cp.unsynced {
		if rng.IntN(2) == 0 {
			v.kept[i] = keptWrite{}
		}
	}
	return v
}

// torn keeps some pages of one unsynced write, and all the others or a
// random subset of them.
func (cp crashPoint) torn(rng *rand.Rand, grain int64, othersKept bool) crashVariant {
	v := cp.randomSubset(rng)
	if othersKept {
		for _, i := range cp.unsynced {
			v.kept[i] = keptWrite{}
		}
	}
	w := cp.unsynced[rng.IntN(len(cp.unsynced))]
	op := cp.ops[w]
	kw := keptWrite{grain: grain, pages: map[int64]bool{}}
	for p := op.off / grain; p*grain < op.off+int64(len(op.data)); p++ {
		kw.pages[p] = rng.IntN(2) == 0
	}
	v.kept[w] = kw
	v.name = fmt.Sprintf("write %d torn into %d-byte pages %v, the others kept %v", w, grain, kw.pages, othersKept)
	return v
}

// crashState is what a crash left: directories, and files by path.
type crashState struct {
	dirs  map[string]bool
	files map[string][]byte
}

// build makes the state the crash left in variant v.
func (cp crashPoint) build(v crashVariant) crashState {
	pendingAt := map[int]int{} // position → its place among its directory's pending changes
	for _, ps := range cp.pending {
		for n, i := range ps {
			pendingAt[i] = n
		}
	}
	st := crashState{dirs: map[string]bool{".": true}, files: map[string][]byte{}}
	names, data := map[string]int{}, map[int][]byte{}
	for i, op := range cp.ops {
		if op.kind == opWrite {
			if kw, ok := cp.keptAt(v, i); ok {
				data[op.ino] = applyWrite(data[op.ino], op, kw)
			}
			continue
		}
		if n, ok := pendingAt[i]; ok {
			if kept, limited := v.dirs[op.dir()]; limited && n >= kept {
				continue
			}
		}
		applyDirOp(st.dirs, names, op)
	}
	for path, ino := range names {
		if st.reachable(filepath.Dir(path)) {
			st.files[path] = data[ino]
		}
	}
	for d := range st.dirs {
		if !st.reachable(d) {
			delete(st.dirs, d)
		}
	}
	return st
}

// reachable reports whether directory d and every one above it exist.
func (st crashState) reachable(d string) bool {
	return d == "." || st.dirs[d] && st.reachable(filepath.Dir(d))
}

// keptAt tells whether (and how) the write at i is in the state.
func (cp crashPoint) keptAt(v crashVariant, i int) (keptWrite, bool) {
	if !slices.Contains(cp.unsynced, i) {
		return keptWrite{}, true
	}
	kw, ok := v.kept[i]
	return kw, ok
}

func applyDirOp(dirs map[string]bool, names map[string]int, op fsOp) {
	switch op.kind {
	case opCreate:
		names[op.path] = op.ino
	case opMkdir:
		dirs[op.path] = true
	case opRename:
		if ino, ok := names[op.path]; ok {
			names[op.to] = ino
			delete(names, op.path)
		}
	case opRemove:
		delete(names, op.path)
	}
}

// applyWrite applies the pages kw keeps of the write op to b.
func applyWrite(b []byte, op fsOp, kw keptWrite) []byte {
	for i := 0; i < len(op.data); {
		off, n := op.off+int64(i), len(op.data)-i
		if kw.grain > 0 {
			n = min(n, int(kw.grain-off%kw.grain))
			if !kw.pages[off/kw.grain] {
				i += n
				continue
			}
		}
		if end := off + int64(n); end > int64(len(b)) {
			b = append(b, make([]byte, end-int64(len(b)))...)
		}
		copy(b[off:], op.data[i:i+n])
		i += n
	}
	return b
}

// key identifies a state, so that each is opened once.
func (st crashState) key() string {
	h := sha256.New()
	for _, d := range sortedKeys(st.dirs) {
		fmt.Fprintf(h, "dir %s\n", d)
	}
	for _, f := range sortedKeys(st.files) {
		fmt.Fprintf(h, "file %s %d\n", f, len(st.files[f]))
		h.Write(st.files[f])
	}
	return string(h.Sum(nil))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// write makes the state under root.
func (st crashState) write(root string) error {
	if err := os.Mkdir(root, 0o750); err != nil {
		return err
	}
	dirs := sortedKeys(st.dirs)
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") < strings.Count(dirs[j], "/") })
	for _, d := range dirs {
		if d != "." {
			if err := os.Mkdir(filepath.Join(root, d), 0o750); err != nil {
				return err
			}
		}
	}
	for path, b := range st.files {
		if err := os.WriteFile(filepath.Join(root, path), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
