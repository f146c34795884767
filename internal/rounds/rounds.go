// Package rounds batches a check that many callers need and one run can
// answer for all of them, such as confirming that a leader still leads:
// one round runs at a time, and every caller that arrives meanwhile shares
// the next one. A round starts only after all of its callers arrived, so
// its answer is as fresh as each of them needs.
package rounds

import (
	"context"
	"sync"
	"sync/atomic"
)

// Rounds runs its check in rounds on demand.
type Rounds struct {
	run  func() (uint64, error)
	runs atomic.Uint64

	mu      sync.Mutex
	next    *Round
	running bool
}

// New returns rounds of run.
func New(run func() (uint64, error)) *Rounds { return &Rounds{run: run} }

// Round is one run of the check, shared by the callers it serves.
type Round struct {
	done  chan struct{}
	value uint64
	err   error
}

// Decided returns a round that has already answered value.
func Decided(value uint64) *Round {
	r := &Round{done: make(chan struct{}), value: value}
	close(r.done)
	return r
}

// Ticket returns the round that starts after now, starting the rounds if
// none is running; the caller waits on it when it needs the answer.
func (b *Rounds) Ticket() *Round {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == nil {
		b.next = &Round{done: make(chan struct{})}
	}
	if !b.running {
		b.running = true
		go b.loop()
	}
	return b.next
}

// Runs counts the rounds run.
func (b *Rounds) Runs() uint64 { return b.runs.Load() }

// Wait returns the round's answer once it has one, or ctx's error.
func (r *Round) Wait(ctx context.Context) (uint64, error) {
	select {
	case <-r.done:
		return r.value, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (b *Rounds) loop() {
	for {
		b.mu.Lock()
		r := b.next
		b.next = nil
		if r == nil {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.runs.Add(1)
		r.value, r.err = b.run()
		close(r.done)
	}
}
