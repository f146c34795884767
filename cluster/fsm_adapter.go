package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

// machineFSM adapts fsm.Machine to raft. It also tracks the highest log
// index the state reflects, so reads can wait until their read index has
// been applied (raft's own AppliedIndex advances when entries are handed
// to the FSM goroutine, not when they have been applied).
type machineFSM struct {
	m   *fsm.Machine
	log *slog.Logger

	mu      sync.Mutex
	state   *fsm.State // the state as of applied: the pair is always consistent
	applied uint64
	term    uint64
	changed chan struct{} // closed and replaced whenever applied advances

	restores atomic.Uint64 // snapshots restored since start (InstallSnapshot, backups)
	commands atomic.Uint64 // command entries applied since start

	verified    *fsm.State // see offerVerified
	verifiedHdr snapshot.Header

	metrics *nodeMetrics // snapshot durations and sizes (nil: none)

	// keyringCh receives a signal (non-blocking) when an apply or a
	// restore changed the gossip keyring, which is then installed outside
	// the apply loop (see keyringLoop); keyring is the last one seen.
	keyringCh chan struct{}
	keyring   *fsm.GossipKeyring

	dataDir  string // where a halt marker goes
	halted   atomic.Pointer[Halt]
	haltCh   chan struct{} // closed when the machine halts
	haltOnce sync.Once
}

func newMachineFSM(m *fsm.Machine, log *slog.Logger, dataDir string) *machineFSM {
	return &machineFSM{m: m, log: log, state: m.State(), changed: make(chan struct{}), dataDir: dataDir,
		haltCh: make(chan struct{}), keyringCh: make(chan struct{}, 1)}
}

var _ raft.BatchingFSM = (*machineFSM)(nil)

// Apply applies one command entry.
func (f *machineFSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order. Configuration entries only
// advance the applied index. An entry the machine cannot apply (it does
// not decode, or applying it panics) halts the machine: that entry and
// every later one are answered with errHalted and never applied, so this
// replica stops where it is instead of diverging.
func (f *machineFSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	var last *raft.Log
	for i, l := range logs {
		if f.halted.Load() != nil {
			out[i] = errHalted
			continue
		}
		if l.Type == raft.LogCommand {
			res, err, detail := f.applyEntry(l)
			if err != nil {
				f.halt(newHalt(l.Index, l.Term, l.Data, err, detail))
				out[i] = errHalted
				continue
			}
			out[i] = res
			f.commands.Add(1)
		}
		last = l
	}
	if last != nil {
		f.advance(last.Index, last.Term)
	}
	return out
}

// errHalted answers entries a halted machine did not apply.
var errHalted = fmt.Errorf("%w: entry not applied", ErrHalted)

// applyEntry applies one command entry; a panic becomes an error, with its
// stack as detail (the transaction it interrupted was never committed).
func (f *machineFSM) applyEntry(l *raft.Log) (res fsm.Result, err error, detail string) {
	defer func() {
		if r := recover(); r != nil {
			err, detail = fmt.Errorf("applying it panicked: %v", r), string(debug.Stack())
		}
	}()
	res, err = f.m.Apply(l.Index, l.Data)
	return res, err, ""
}

// halt stops applying for good, says why in one line and leaves the
// marker that keeps a restart from replaying into the same entry.
func (f *machineFSM) halt(h Halt) {
	f.halted.Store(&h)
	f.log.Error("cannot apply log entry: node halted so as not to diverge from the other replicas; "+
		"see docs/operations.md#a-log-entry-that-cannot-be-applied",
		"index", h.Index, "term", h.Term, "command_type", h.CommandType, "command", h.CommandName,
		"sha256", h.SHA256, "err", h.Error, "inspect", "raftcat log show --data-dir "+f.dataDir)
	if err := writeHalt(f.dataDir, h); err != nil {
		f.log.Error("could not write the halt marker", "err", err)
	}
	f.haltOnce.Do(func() { close(f.haltCh) })
}

// Halted returns the entry the machine halted on, if it did.
func (f *machineFSM) Halted() (Halt, bool) {
	if h := f.halted.Load(); h != nil {
		return *h, true
	}
	return Halt{}, false
}

func (f *machineFSM) advance(index, term uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = f.m.State()
	f.noteKeyring()
	if index > f.applied {
		f.applied, f.term = index, term
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// noteKeyring signals keyringCh if the state's gossip keyring is not the
// one last seen. f.mu is held.
func (f *machineFSM) noteKeyring() {
	if k := f.state.GossipKeyring(); k != f.keyring {
		f.keyring = k
		select {
		case f.keyringCh <- struct{}{}:
		default:
		}
	}
}

// Applied returns the highest index the state reflects.
func (f *machineFSM) Applied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// View returns the state together with the index it reflects.
func (f *machineFSM) View() (*fsm.State, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, f.applied
}

// WaitApplied blocks until the state reflects index, or ctx ends.
func (f *machineFSM) WaitApplied(ctx context.Context, index uint64) error {
	for {
		f.mu.Lock()
		applied, ch := f.applied, f.changed
		f.mu.Unlock()
		if applied >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for index %d (applied %d): %w", index, applied, ctx.Err())
		}
	}
}

// Snapshot captures the current immutable state; persisting it does not
// block Apply.
func (f *machineFSM) Snapshot() (raft.FSMSnapshot, error) {
	if h, ok := f.Halted(); ok {
		// raft counts the entries it handed over as applied; a snapshot
		// now would record the halted entry as applied.
		return nil, fmt.Errorf("%w at index %d: no snapshots", ErrHalted, h.Index)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &stateSnapshot{state: f.state, index: f.applied, term: f.term, metrics: f.metrics}, nil
}

// Restore replaces the whole state with a snapshot's.
func (f *machineFSM) Restore(rc io.ReadCloser) (err error) {
	defer rc.Close()
	in := &countingReader{r: rc}
	if f.metrics != nil {
		defer func(start time.Time) { f.metrics.snapshotDone(snapRestore, start, in.n, err) }(time.Now())
	}
	sr, err := snapshot.NewReader(in)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	st, hdr := f.takeVerified(sr.Header())
	reused := st != nil
	if !reused {
		if st, hdr, err = snapshot.ReadStateFrom(sr); err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
	}
	f.m.Replace(st)
	f.mu.Lock()
	f.applied, f.term = 0, 0 // the restored state may be older than the one it replaces
	f.mu.Unlock()
	f.advance(hdr.Index, hdr.Term)
	f.restores.Add(1)
	f.log.Info("restored state from snapshot", "index", hdr.Index, "term", hdr.Term, "already_verified", reused)
	return nil
}

// offerVerified hands the state of a backup this node has just read and
// verified to the restore raft is about to run with that same file, so a
// large catalog is not decoded twice (nil withdraws it).
func (f *machineFSM) offerVerified(st *fsm.State, hdr snapshot.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.verified, f.verifiedHdr = st, hdr
}

// takeVerified returns the offered state if its header is the one of the
// snapshot being restored.
func (f *machineFSM) takeVerified(h snapshot.Header) (*fsm.State, snapshot.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, vh := f.verified, f.verifiedHdr
	f.verified = nil
	if st == nil || vh.Index != h.Index || vh.Term != h.Term || vh.CreatedUnixMs != h.CreatedUnixMs ||
		!maps.Equal(vh.Meta, h.Meta) {
		return nil, snapshot.Header{}
	}
	return st, vh
}

type stateSnapshot struct {
	state       *fsm.State
	index, term uint64
	metrics     *nodeMetrics // nil: none
}

func (s *stateSnapshot) Persist(sink raft.SnapshotSink) (err error) {
	out := &countingWriter{w: sink}
	if s.metrics != nil {
		defer func(start time.Time) { s.metrics.snapshotDone(snapPersist, start, out.n, err) }(time.Now())
	}
	hdr := snapshot.Header{Index: s.index, Term: s.term, CreatedUnixMs: time.Now().UnixMilli()}
	if err := snapshot.WriteState(out, s.state, hdr); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// countingWriter and countingReader count the bytes of a snapshot.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *stateSnapshot) Release() {}
