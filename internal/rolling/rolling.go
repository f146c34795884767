// Package rolling keeps in-process metrics over a sliding window of time:
// events counted per slot of fixed width (a second, say), each slot with
// a histogram of the latencies observed in it, in a ring that forgets a
// slot once it falls out of the window. Rates and quantiles over any run
// of slots are computed when asked. A Window is safe for concurrent use.
package rolling

import (
	"sync"
	"time"
)

// Window counts events and keeps their latencies over the last span of
// time, in slots of a fixed width.
type Window struct {
	mu    sync.Mutex
	width time.Duration
	slots []slot
}

// slot holds what happened during one width of time.
type slot struct {
	n     int64 // which slot of time this is (time / width); -1 when unused
	count uint64
	lat   *histogram // nil until a latency is observed in the slot
}

// New returns a window over span in slots of width (span is rounded up to
// a whole number of slots, at least one).
func New(span, width time.Duration) *Window {
	if width <= 0 {
		panic("rolling: slot width must be positive")
	}
	size := max(1, int((span+width-1)/width))
	w := &Window{width: width, slots: make([]slot, size)}
	for i := range w.slots {
		w.slots[i].n = -1
	}
	return w
}

// Width is the width of one slot.
func (w *Window) Width() time.Duration { return w.width }

// Span is the time the window covers.
func (w *Window) Span() time.Duration { return w.width * time.Duration(len(w.slots)) }

// Add counts n events that happened at at.
func (w *Window) Add(at time.Time, n uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.slotAt(at); s != nil {
		s.count += n
	}
}

// Observe counts one event that happened at at and took d.
func (w *Window) Observe(at time.Time, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.slotAt(at)
	if s == nil {
		return
	}
	s.count++
	if s.lat == nil {
		s.lat = &histogram{}
	}
	s.lat.observe(d)
}

// slotAt returns the slot for time at, cleared if it held an older slot
// of time; nil if at lies before the time the slot holds (too old).
func (w *Window) slotAt(at time.Time) *slot {
	n := w.number(at)
	s := &w.slots[n%int64(len(w.slots))]
	switch {
	case s.n == n:
		return s
	case s.n > n:
		return nil
	}
	s.n, s.count = n, 0
	if s.lat != nil {
		s.lat.reset()
	}
	return s
}

// number is the slot number of a time (never negative).
func (w *Window) number(at time.Time) int64 { return max(0, at.UnixNano()/int64(w.width)) }
