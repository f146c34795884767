package raftlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/raft"
)

// What the crash tests record: every change the store makes to its files
// and directories, in order, with notes of what the store told its caller
// (this much is on disk, this deletion is done) in between. Any prefix of
// the record is a point where the machine could have lost power.

type opKind int

const (
	opCreate  opKind = iota // a file made (path)
	opMkdir                 // a directory made (path)
	opRename                // path renamed to to, in the same directory
	opRemove                // path removed
	opSyncDir               // the directory path synced
	opWrite                 // data written to file ino at off
	opSync                  // file ino synced (or not: failed)
	opNote                  // what the store told its caller
)

type fsOp struct {
	kind     opKind
	path, to string // relative to the recording's root
	ino      int    // the file written, synced or made
	off      int64
	data     []byte
	failed   bool
	note     *note
}

// dir is the directory a directory change changes.
func (op fsOp) dir() string { return filepath.Dir(op.path) }

func (op fsOp) String() string {
	switch op.kind {
	case opCreate:
		return fmt.Sprintf("create %s (file %d)", op.path, op.ino)
	case opMkdir:
		return "mkdir " + op.path
	case opRename:
		return fmt.Sprintf("rename %s %s", op.path, op.to)
	case opRemove:
		return "remove " + op.path
	case opSyncDir:
		return "sync dir " + op.path
	case opWrite:
		return fmt.Sprintf("write file %d at %d, %d bytes", op.ino, op.off, len(op.data))
	case opSync:
		return fmt.Sprintf("sync file %d (failed %v)", op.ino, op.failed)
	}
	return "note " + op.note.String()
}

type noteKind int

const (
	noteStoring  noteKind = iota // StoreLogs called with logs
	noteDurable                  // StoreLogs or WaitDurable returned: on disk through index
	noteDeleting                 // DeleteRange(lo, hi) called
	noteDeleted                  // DeleteRange(lo, hi) returned
	noteOpened                   // Open returned, the log holding logs
	noteRecovery                 // Open dropped what a failed store had left after index
)

type note struct {
	kind   noteKind
	logs   []*raft.Log
	index  uint64
	lo, hi uint64
}

func (n *note) String() string {
	switch n.kind {
	case noteStoring:
		return fmt.Sprintf("storing %d-%d", n.logs[0].Index, n.logs[len(n.logs)-1].Index)
	case noteDurable:
		return fmt.Sprintf("durable through %d", n.index)
	case noteDeleting:
		return fmt.Sprintf("deleting %d-%d", n.lo, n.hi)
	case noteDeleted:
		return fmt.Sprintf("deleted %d-%d", n.lo, n.hi)
	case noteRecovery:
		return fmt.Sprintf("recovered: dropped after %d", n.index)
	}
	return fmt.Sprintf("opened with %d entries", len(n.logs))
}

// recFS is the os package's file system, recording each change it makes
// under root. Its syncs only record: the directory is a copy of what the
// store wrote, and the crash states are rebuilt from the record.
type recFS struct {
	root string
	mu   sync.Mutex
	ops  []fsOp
	inos map[string]int // the file at each path
	next int
	// failSyncs, when set, decides whether a sync of the file at path
	// fails (without syncing anything).
	failSyncs func(path string) bool
}

func newRecFS(root string) *recFS { return &recFS{root: root, inos: map[string]int{}} }

func (r *recFS) rel(p string) string {
	rel, err := filepath.Rel(r.root, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		panic(fmt.Sprintf("%s is outside %s", p, r.root))
	}
	return rel
}

func (r *recFS) add(op fsOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// tell records what the store told its caller.
func (r *recFS) tell(n note) { r.add(fsOp{kind: opNote, note: &n}) }

func (r *recFS) record() []fsOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

func (r *recFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	if flag&os.O_CREATE != 0 {
		return nil, errors.New("recFS: files are made with CreateTemp")
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	ino, ok := r.inos[r.rel(name)]
	r.mu.Unlock()
	if !ok {
		f.Close()
		return nil, fmt.Errorf("recFS: %s was not made while recording", name)
	}
	return &recFile{File: f, r: r, ino: ino}, nil
}

func (r *recFS) CreateTemp(dir, pattern string) (file, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.next++
	ino, path := r.next, r.rel(f.Name())
	r.inos[path] = ino
	r.mu.Unlock()
	r.add(fsOp{kind: opCreate, path: path, ino: ino})
	return &recFile{File: f, r: r, ino: ino}, nil
}

func (r *recFS) Rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	r.mu.Lock()
	rf, rt := r.rel(from), r.rel(to)
	r.inos[rt] = r.inos[rf]
	delete(r.inos, rf)
	r.mu.Unlock()
	r.add(fsOp{kind: opRename, path: rf, to: rt})
	return nil
}

func (r *recFS) Remove(name string) error {
	if err := os.Remove(name); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.inos, r.rel(name))
	r.mu.Unlock()
	r.add(fsOp{kind: opRemove, path: r.rel(name)})
	return nil
}

func (r *recFS) Mkdir(name string, perm os.FileMode) error {
	if err := os.Mkdir(name, perm); err != nil {
		return err
	}
	r.add(fsOp{kind: opMkdir, path: r.rel(name)})
	return nil
}

func (r *recFS) SyncDir(dir string) error {
	r.add(fsOp{kind: opSyncDir, path: r.rel(dir)})
	return nil
}

func (r *recFS) ReadFile(name string) ([]byte, error)  { return os.ReadFile(name) }
func (r *recFS) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

// recFile is a file of a recFS.
type recFile struct {
	*os.File
	r   *recFS
	ino int
	pos int64 // where Write writes
}

func (f *recFile) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(b, off)
	if n > 0 {
		f.r.add(fsOp{kind: opWrite, ino: f.ino, off: off, data: append([]byte(nil), b[:n]...)})
	}
	return n, err
}

func (f *recFile) Write(b []byte) (int, error) {
	n, err := f.WriteAt(b, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *recFile) Sync() error { return f.Datasync() }

func (f *recFile) Datasync() error {
	if f.r.failSyncs != nil && f.r.failSyncs(f.Name()) {
		f.r.add(fsOp{kind: opSync, ino: f.ino, failed: true})
		return errors.New("injected: sync failed")
	}
	f.r.add(fsOp{kind: opSync, ino: f.ino})
	return nil
}

// noSyncFS is the os package's file system without syncs: the crash
// tests open thousands of crash states they throw away, and a sync of
// each would take minutes.
type noSyncFS struct{ osFS }

func (fs noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := fs.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f.(osFile)}, nil
}

func (fs noSyncFS) CreateTemp(dir, pattern string) (file, error) {
	f, err := fs.osFS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f.(osFile)}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }

type noSyncFile struct{ osFile }

func (noSyncFile) Sync() error     { return nil }
func (noSyncFile) Datasync() error { return nil }
