package relay

import (
	"sync"
	"testing"
	"time"
)

// A worker that finished a request serves the next one; concurrent
// requests get workers of their own; idle workers leave.
func TestWorkersAreReusedAndLeaveWhenIdle(t *testing.T) {
	w := newWorkers(time.Minute)
	done := make(chan struct{})
	for range 20 {
		w.run(func() { done <- struct{}{} })
		<-done
		waitFor(t, "the worker to wait", func() bool { return w.waiting.Load() == 1 })
	}
	// A worker counts itself waiting just before it parks, so a request
	// may now and then find none parked yet and start a second one.
	if n := w.started.Load(); n > 2 {
		t.Fatalf("20 requests one after another started %d workers, want 1 (or 2)", n)
	}

	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(3)
	for range 3 {
		w.run(func() { started.Done(); <-release })
	}
	started.Wait() // three at once: two more workers
	if n := w.running.Load(); n < 3 {
		t.Fatalf("%d workers for 3 concurrent requests", n)
	}
	close(release)

	short := newWorkers(20 * time.Millisecond)
	short.run(func() {})
	waitFor(t, "the idle worker to leave", func() bool { return short.running.Load() == 0 })
}
