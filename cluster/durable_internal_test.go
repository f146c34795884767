package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

type answered struct {
	req  *raft.AppendEntriesRequest
	resp *raft.AppendEntriesResponse
	err  error
}

func (a answered) Error() error                          { return a.err }
func (a answered) Start() time.Time                      { return time.Time{} }
func (a answered) Request() *raft.AppendEntriesRequest   { return a.req }
func (a answered) Response() *raft.AppendEntriesResponse { return a.resp }

type fakePipeline struct{ in chan raft.AppendFuture }

func (p fakePipeline) AppendEntries(*raft.AppendEntriesRequest, *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	return nil, errors.New("not sent")
}
func (p fakePipeline) Consumer() <-chan raft.AppendFuture { return p.in }
func (p fakePipeline) Close() error                       { return nil }

// heldLog records the indexes waited for and makes each wait last until
// the test releases it.
type heldLog struct {
	waits   chan uint64
	release chan error
}

func (l heldLog) WaitDurable(index uint64, stop <-chan struct{}) error {
	l.waits <- index
	select {
	case err := <-l.release:
		return err
	case <-stop:
		return errors.New("stopped")
	}
}

func accepted(from, to uint64, ok bool) answered {
	req := &raft.AppendEntriesRequest{}
	for i := from; i <= to && to > 0; i++ {
		req.Entries = append(req.Entries, &raft.Log{Index: i})
	}
	return answered{req: req, resp: &raft.AppendEntriesResponse{Success: ok}}
}

// heldPipeline runs a durable pipeline over a fake one whose answers the
// test sends on in, with a log whose waits the test releases.
func heldPipeline(t *testing.T) (heldLog, chan<- raft.AppendFuture, *durablePipeline) {
	log := heldLog{waits: make(chan uint64, 4), release: make(chan error)}
	in := make(chan raft.AppendFuture, 4)
	d := &durablePipeline{AppendPipeline: fakePipeline{in}, t: &durableTransport{log: log},
		out: make(chan raft.AppendFuture, 4), stop: make(chan struct{})}
	go d.pass()
	t.Cleanup(func() { d.Close() })
	return log, in, d
}

// A follower's acceptance reaches raft only once the leader's log is on
// disk up to the last entry accepted, and in the order answers came;
// refusals and heartbeats are not held.
func TestAcceptancesWaitForTheLeadersSync(t *testing.T) {
	log, in, d := heldPipeline(t)

	first, refused, heartbeat := accepted(10, 12, true), accepted(13, 14, false), accepted(0, 0, true)
	in <- first
	in <- refused
	in <- heartbeat
	if got := <-log.waits; got != 12 {
		t.Fatalf("waited for index %d, want 12", got)
	}
	select {
	case f := <-d.Consumer():
		t.Fatalf("raft got an answer (%d entries) before the leader's sync", len(f.Request().Entries))
	default:
	}
	log.release <- nil
	for i, want := range []answered{first, refused, heartbeat} {
		if got := (<-d.Consumer()).(answered); got.req != want.req {
			t.Fatalf("answer %d out of order", i)
		}
	}
	select {
	case got := <-log.waits:
		t.Fatalf("a refusal or heartbeat waited for index %d", got)
	default:
	}
}

// An acceptance whose wait failed (the leader's sync failed) reaches raft
// as a refusal, so raft never counts it and leaves the pipeline.
func TestAnAcceptanceWhoseWaitFailedIsRefused(t *testing.T) {
	log, in, d := heldPipeline(t)
	in <- accepted(1, 3, true)
	<-log.waits
	log.release <- errors.New("sync failed")
	if f := <-d.Consumer(); f.Response().Success {
		t.Fatal("an acceptance reached raft after the leader's sync failed")
	}
}

// A batch holding a configuration change is never deferred: raft recounts
// the commit under the new configuration right after writing it.
func TestConfigurationEntriesAreNotDeferred(t *testing.T) {
	cmd, conf := &raft.Log{Type: raft.LogCommand}, &raft.Log{Type: raft.LogConfiguration}
	if !deferrable([]*raft.Log{cmd, {Type: raft.LogNoop}}) {
		t.Error("commands and a no-op may defer their sync")
	}
	for _, logs := range [][]*raft.Log{{conf}, {cmd, conf}, {{Type: raft.LogRemovePeerDeprecated}}, {{Type: raft.LogAddPeerDeprecated}}} {
		if deferrable(logs) {
			t.Errorf("a batch with a %v entry may defer its sync", logs[len(logs)-1].Type)
		}
	}
}
