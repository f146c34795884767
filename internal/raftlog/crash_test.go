package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestEveryCrashPointReopens records what the store does to its files in
// a short workload (appends deferred and not, over several small
// segments; a conflicting tail replaced, within a segment and over two;
// compaction; a torn write and a killed process; the whole log deleted;
// a restart; a sync that fails and the restart after it; appends after
// each), then rebuilds, for every prefix of that record, the states a
// crash there could leave (see crashstate_test.go) and reopens the log on
// each. Every state must open and hold a log that keeps every entry the
// store had said was on disk (unless a deletion of it had begun), holds
// no entry that was not written at its index or whose deletion had
// finished, and runs without a gap through entries that were in the log
// together. The log must then take the next entry and hold exactly that
// after another reopen.
func TestEveryCrashPointReopens(t *testing.T) {
	w := newCrashWorkload(t)
	w.run()
	ops := w.rec.record()
	c := &crashChecker{t: t, root: t.TempDir(), seen: map[string]crashOutcome{}, written: written(ops)}
	for k := 0; k <= len(ops); k++ {
		c.checkPoint(ops, k)
	}
	t.Logf("%d operations recorded, %d crash states checked, %d different ones opened", len(ops), c.checked, len(c.seen))
}

const crashSegmentSize = 8192

// crashWorkload drives a stepped store on a recording file system: it
// runs the flusher's rounds itself, so the record is the same every run.
type crashWorkload struct {
	t         *testing.T
	rec       *recFS
	dir       string
	s         *Store
	deferring bool
	failures  int
}

func newCrashWorkload(t *testing.T) *crashWorkload {
	root := t.TempDir()
	return &crashWorkload{t: t, rec: newRecFS(root), dir: filepath.Join(root, "raft", "segments")}
}

func (w *crashWorkload) run() {
	w.open()
	for b := uint64(0); b < 12; b++ { // 1-120 over several segments
		w.store(b*10+1, b*10+10, 1, b%3 != 2)
		if b%3 == 1 {
			w.round(b*10 + 10)
		}
	}
	w.deleteRange(111, 120) // a conflict: the tail replaced by a new term's
	w.store(111, 114, 2, true)
	w.store(115, 118, 2, true)
	w.round(118)
	w.deleteRange(1, 60) // compaction
	for i := uint64(119); i <= 159; i += 10 {
		w.store(i, i+9, 2, i%20 == 19)
	}
	w.deleteRange(125, 168) // a conflicting tail over more than one segment
	w.store(125, 134, 3, false)
	w.store(135, 140, 3, true)
	w.tear(141, 146, 3) // as a power cut could leave a write: a sector of it never written
	w.kill()            // what it wrote is in the page cache only
	w.open()
	last, _ := w.s.LastIndex()
	w.store(last+1, 150, 3, true)
	w.round(150)
	first, _ := w.s.FirstIndex()
	w.deleteRange(first, 150) // a snapshot installed: the whole log goes
	w.store(400, 410, 3, true)
	w.store(411, 420, 3, false)
	w.store(421, 430, 3, true)
	w.close()
	w.open()
	for i := uint64(431); i <= 470; i += 10 { // deferred writes pile up, a roll among them
		w.store(i, i+9, 3, true)
	}
	w.round(470)
	w.store(471, 480, 3, false)
	w.store(481, 490, 3, true)
	w.failRound() // 481-490 may never reach the disk
	w.open()      // and are dropped
	last, _ = w.s.LastIndex()
	w.store(last+1, last+10, 4, true)
	w.round(last + 10)
	w.store(last+11, last+15, 4, true)
	w.close()
}

// failRound runs a flusher round whose sync fails, checks the store
// stops and says so once, and closes it.
func (w *crashWorkload) failRound() {
	w.rec.failSyncs = func(path string) bool { return strings.HasSuffix(path, segmentExt) }
	defer func() { w.rec.failSyncs = nil }()
	if err := w.s.flush(); err == nil {
		w.t.Fatal("a round whose sync failed succeeded")
	}
	if err := w.s.StoreLogs(crashEntries(491, 491, 4)); err == nil {
		w.t.Fatal("a write after a failed sync succeeded")
	}
	if w.failures != 1 {
		w.t.Fatalf("%d failures reported", w.failures)
	}
	w.s.Close()
}

// tear writes the records of from..to after the newest segment's end,
// but for their second sector, as a crash could leave them.
func (w *crashWorkload) tear(from, to, term uint64) {
	logs := crashEntries(from, to, term)
	w.rec.tell(note{kind: noteStoring, logs: logs})
	g := w.s.segs[len(w.s.segs)-1]
	b, _ := records(g, logs)
	lost := g.end()/sectorSize + 1
	writeTorn(w.t, g, b, g.end(), func(sector int64) bool { return sector != lost })
}

// kill leaves the store as a killed process would: its files closed,
// nothing synced.
func (w *crashWorkload) kill() {
	if err := w.s.closeFiles(w.s.segs); err != nil {
		w.t.Fatal(err)
	}
}

func (w *crashWorkload) open() {
	s, err := openOn(w.dir, Options{SegmentSize: crashSegmentSize, DeferSync: func([]*raft.Log) bool { return w.deferring },
		OnFailure: func(error) { w.failures++ }}, w.rec, true)
	if err != nil {
		w.t.Fatal(err)
	}
	w.s = s
	logs, err := readLog(s)
	if err != nil {
		w.t.Fatal(err)
	}
	w.rec.tell(note{kind: noteOpened, logs: logs})
}

func (w *crashWorkload) close() {
	if err := w.s.Close(); err != nil {
		w.t.Fatal(err)
	}
}

// store stores from..to of term, deferring the sync or not.
func (w *crashWorkload) store(from, to, term uint64, deferred bool) {
	logs := crashEntries(from, to, term)
	w.rec.tell(note{kind: noteStoring, logs: logs})
	w.deferring = deferred
	if err := w.s.StoreLogs(logs); err != nil {
		w.t.Fatal(err)
	}
	if !deferred {
		w.rec.tell(note{kind: noteDurable, index: to})
	}
}

// round runs a flusher round, then waits for index to be on disk.
func (w *crashWorkload) round(index uint64) {
	w.s.flush()
	if err := w.s.WaitDurable(index, nil); err != nil {
		w.t.Fatal(err)
	}
	w.rec.tell(note{kind: noteDurable, index: index})
}

func (w *crashWorkload) deleteRange(lo, hi uint64) {
	w.rec.tell(note{kind: noteDeleting, lo: lo, hi: hi})
	if err := w.s.DeleteRange(lo, hi); err != nil {
		w.t.Fatal(err)
	}
	w.rec.tell(note{kind: noteDeleted, lo: lo, hi: hi})
}

// crashEntries makes entries from..to of term, of sizes that spread a
// batch over pages and sectors.
func crashEntries(from, to, term uint64) []*raft.Log {
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		data := make([]byte, 20+(i*53+term*11)%400)
		for j := range data {
			data[j] = byte(i*7 + term*13 + uint64(j))
		}
		l := &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: data, AppendedAt: time.Unix(1700000000, int64(i)).UTC()}
		if i%4 == 0 {
			l.Extensions = []byte(fmt.Sprintf("ext-%d-%d", i, term))
		}
		logs = append(logs, l)
	}
	return logs
}

// readLog reads every entry s holds.
func readLog(s *Store) ([]*raft.Log, error) {
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	var logs []*raft.Log
	for i := first; i <= last && last > 0; i++ {
		l := new(raft.Log)
		if err := s.GetLog(i, l); err != nil {
			return nil, err
		}
		logs = append(logs, l)
	}
	return logs, nil
}

func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type && bytes.Equal(a.Data, b.Data) &&
		bytes.Equal(a.Extensions, b.Extensions) && a.AppendedAt.Equal(b.AppendedAt)
}

// crashModel is what the notes up to a crash point say the log must and
// may hold.
type crashModel struct {
	cur      map[uint64]*version   // the log as the store's caller knows it
	must     map[uint64]*version   // what the store said was on disk, not deleted since
	versions map[uint64][]*version // every entry written at each index
	err      error
}

// version is an entry written at its index from the note at begin on,
// until a deletion of it finished at end.
type version struct {
	l          *raft.Log
	begin, end int
}

func modelOf(ops []fsOp) *crashModel {
	m := &crashModel{cur: map[uint64]*version{}, must: map[uint64]*version{}, versions: map[uint64][]*version{}}
	for pos, op := range ops {
		if op.kind == opNote {
			m.apply(pos, op.note)
		}
	}
	return m
}

func (m *crashModel) apply(pos int, n *note) {
	switch n.kind {
	case noteStoring:
		for _, l := range n.logs {
			v := &version{l: l, begin: pos, end: math.MaxInt}
			m.versions[l.Index] = append(m.versions[l.Index], v)
			m.cur[l.Index] = v
		}
	case noteDurable:
		for i, v := range m.cur {
			if i <= n.index {
				m.must[i] = v
			}
		}
	case noteDeleting: // what it deletes need not stay
		for i := range m.must {
			if i >= n.lo && i <= n.hi {
				delete(m.must, i)
			}
		}
	case noteDeleted:
		m.deleted(pos, n.lo, n.hi)
	case noteOpened:
		m.opened(pos, n.logs)
	}
}

// deleted applies a finished DeleteRange: a deleted tail or whole log
// may not come back; a deleted prefix may (segments go whole).
func (m *crashModel) deleted(pos int, lo, hi uint64) {
	first, last := m.bounds()
	prefix := lo <= first && hi < last
	for i, v := range m.cur {
		if i >= lo && i <= hi {
			if !prefix {
				v.end = pos
			}
			delete(m.cur, i)
			delete(m.must, i)
		}
	}
}

func (m *crashModel) bounds() (first, last uint64) {
	first = math.MaxUint64
	for i := range m.cur {
		first, last = min(first, i), max(last, i)
	}
	return first, last
}

// opened: what a reopened store holds is on disk (it syncs it first);
// what it no longer holds after its end is gone for good.
func (m *crashModel) opened(pos int, logs []*raft.Log) {
	held := map[uint64]*version{}
	for _, l := range logs {
		v := m.find(l, pos)
		if v == nil {
			m.err = fmt.Errorf("reopened during the workload, the log holds entry %d (term %d), never written there", l.Index, l.Term)
			return
		}
		held[l.Index] = v
	}
	for i, v := range m.cur {
		if _, ok := held[i]; !ok && (len(logs) == 0 || i > logs[len(logs)-1].Index) {
			v.end = pos
		}
	}
	m.cur, m.must = held, maps.Clone(held)
}

// find returns a version equal to l that the log could hold at pos.
func (m *crashModel) find(l *raft.Log, pos int) *version {
	for _, v := range m.versions[l.Index] {
		if sameLog(v.l, l) && v.begin < pos && v.end >= pos {
			return v
		}
	}
	return nil
}

// check returns what is wrong with logs, the log a crash at pos left.
func (m *crashModel) check(logs []*raft.Log, pos int) error {
	if m.err != nil {
		return m.err
	}
	held := map[uint64]*raft.Log{}
	for i, l := range logs {
		if i > 0 && l.Index != logs[i-1].Index+1 {
			return fmt.Errorf("entry %d follows %d", l.Index, logs[i-1].Index)
		}
		held[l.Index] = l
	}
	for i, v := range m.must {
		if l, ok := held[i]; !ok || !sameLog(l, v.l) {
			return fmt.Errorf("entry %d (term %d) was on disk but is lost (log %s)", i, v.l.Term, span(logs))
		}
	}
	for i, l := range logs {
		if m.find(l, pos) == nil {
			return fmt.Errorf("entry %d (term %d) was never written there, or its deletion had finished", l.Index, l.Term)
		}
		if i > 0 && !m.together(logs[i-1], l, pos) {
			return fmt.Errorf("entries %d and %d (terms %d, %d) were never in the log together", logs[i-1].Index, l.Index, logs[i-1].Term, l.Term)
		}
	}
	return nil
}

// together reports whether a and b were in the log at one time.
func (m *crashModel) together(a, b *raft.Log, pos int) bool {
	for _, va := range m.versions[a.Index] {
		for _, vb := range m.versions[b.Index] {
			if sameLog(va.l, a) && sameLog(vb.l, b) && max(va.begin, vb.begin) < min(va.end, vb.end) {
				return true
			}
		}
	}
	return false
}

func span(logs []*raft.Log) string {
	if len(logs) == 0 {
		return "empty"
	}
	return fmt.Sprintf("%d-%d", logs[0].Index, logs[len(logs)-1].Index)
}

// written returns the last entry the record writes at each index.
func written(ops []fsOp) map[uint64]*raft.Log {
	last := map[uint64]*raft.Log{}
	for _, op := range ops {
		if op.kind == opNote && op.note.kind == noteStoring {
			for _, l := range op.note.logs {
				last[l.Index] = l
			}
		}
	}
	return last
}

// crashChecker opens each different crash state once.
type crashChecker struct {
	t       *testing.T
	root    string
	seen    map[string]crashOutcome
	checked int
	written map[uint64]*raft.Log // the next entry to store after a crash
}

// crashOutcome is what a crash state reopened to.
type crashOutcome struct {
	logs []*raft.Log
	err  error
}

// checkPoint checks every variant of a crash after the first k ops.
func (c *crashChecker) checkPoint(ops []fsOp, k int) {
	cp := crashAt(ops[:k])
	m := modelOf(ops[:k])
	rng := rand.New(rand.NewPCG(uint64(k), 7))
	for _, v := range cp.variants(rng) {
		c.checked++
		out := c.outcome(cp.build(v))
		err := out.err
		if err == nil {
			err = m.check(out.logs, k)
		}
		if err != nil {
			c.t.Fatalf("crash after %d operations (%s), %s: %v\nthe operations before:\n%s", k, lastOp(ops, k), v.name, err, recent(ops, k))
		}
	}
}

// outcome opens st (or remembers how it opened).
func (c *crashChecker) outcome(st crashState) crashOutcome {
	key := st.key()
	if out, ok := c.seen[key]; ok {
		return out
	}
	dir := filepath.Join(c.root, fmt.Sprint(len(c.seen)))
	out := crashOutcome{err: st.write(dir)}
	if out.err == nil {
		out.logs, out.err = reopenCrashState(filepath.Join(dir, "raft", "segments"), c.written)
	}
	c.seen[key] = out
	if err := os.RemoveAll(dir); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// reopenCrashState opens the log in dir and reads it, then stores the
// next entry and checks a reopen holds the log with it and nothing more.
// The next entry is one the record wrote at that index, if any, as raft
// would send it again: a crash must not leave records after the log's
// end that writing it again would make part of the log.
func reopenCrashState(dir string, written map[uint64]*raft.Log) ([]*raft.Log, error) {
	s, err := openOn(dir, Options{SegmentSize: crashSegmentSize}, noSyncFS{}, true)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	logs, err := readLog(s)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("read: %w", err)
	}
	next := &raft.Log{Index: 1, Term: 777, Data: []byte("after the crash")}
	if len(logs) > 0 {
		next.Index = logs[len(logs)-1].Index + 1
	}
	if l, ok := written[next.Index]; ok {
		next = l
	}
	if err := errors.Join(s.StoreLog(next), s.Close()); err != nil {
		return nil, fmt.Errorf("store %d after the crash: %w", next.Index, err)
	}
	again, err := openAndRead(dir)
	if err != nil {
		return nil, fmt.Errorf("open after storing %d: %w", next.Index, err)
	}
	if want := append(logs, next); !sameLogs(again, want) {
		return nil, fmt.Errorf("after storing %d over a log of %s, a reopen holds %s", next.Index, span(logs), span(again))
	}
	return logs, nil
}

func openAndRead(dir string) ([]*raft.Log, error) {
	s, err := openOn(dir, Options{SegmentSize: crashSegmentSize}, noSyncFS{}, true)
	if err != nil {
		return nil, err
	}
	logs, err := readLog(s)
	return logs, errors.Join(err, s.Close())
}

func sameLogs(a, b []*raft.Log) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameLog(a[i], b[i]) {
			return false
		}
	}
	return true
}

func lastOp(ops []fsOp, k int) string {
	if k == 0 {
		return "none"
	}
	return ops[k-1].String()
}

// recent lists the operations up to k, the last ones in full.
func recent(ops []fsOp, k int) string {
	var b strings.Builder
	for i := max(0, k-40); i < k; i++ {
		fmt.Fprintf(&b, "  %d: %s\n", i, ops[i])
	}
	return b.String()
}
