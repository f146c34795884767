package relay

import (
	"sync/atomic"
	"time"
)

// workers runs relayed requests on goroutines that outlive one request.
// Serving a request grows a goroutine's stack (JSON encoding is deep), and
// a fresh goroutine per request pays for that growth, a copy of the
// stack, every time; a worker that has served one keeps its stack for
// the next (the collector may halve an idle worker's stack, so a worker
// grows it again at most once per collection, not once per request). Workers are started as needed and leave after idle time
// without work, so the pool follows the load.
type workers struct {
	idle time.Duration
	jobs chan func() // unbuffered: a send succeeds only when a worker waits

	running atomic.Int64 // workers alive
	waiting atomic.Int64 // workers waiting for a request
	started atomic.Int64 // workers ever started
}

// workerIdle is how long a worker waits for its next request before it
// leaves.
const workerIdle = 10 * time.Second

func newWorkers(idle time.Duration) *workers {
	return &workers{idle: idle, jobs: make(chan func())}
}

// run hands f to a waiting worker, or starts one for it.
func (w *workers) run(f func()) {
	select {
	case w.jobs <- f:
	default:
		w.running.Add(1)
		w.started.Add(1)
		go w.work(f)
	}
}

func (w *workers) work(f func()) {
	t := time.NewTimer(w.idle)
	defer func() {
		t.Stop()
		w.running.Add(-1)
	}()
	for {
		f()
		t.Reset(w.idle)
		w.waiting.Add(1)
		select {
		case f = <-w.jobs:
			w.waiting.Add(-1)
		case <-t.C:
			w.waiting.Add(-1)
			return
		}
	}
}
