package bench

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestSchedHistQuantilesAndTotal(t *testing.T) {
	h := schedHist{counts: []uint64{0, 90, 9, 1}, buckets: []float64{math.Inf(-1), 0.001, 0.002, 0.004, math.Inf(1)}}
	if got := h.quantile(0.5); got != 0.002 {
		t.Errorf("p50 = %v, want 0.002 (the upper edge of the bucket of the 50th wait)", got)
	}
	if got := h.quantile(0.99); got != 0.004 {
		t.Errorf("p99 = %v, want 0.004", got)
	}
	if got := h.quantile(1); got != 0.004 {
		t.Errorf("max = %v, want 0.004 (the open bucket's finite edge)", got)
	}
	want := 90*0.0015 + 9*0.003 + 1*0.004
	if got := h.total(); math.Abs(got-want) > 1e-12 {
		t.Errorf("total = %v, want %v", got, want)
	}
	later := schedHist{counts: []uint64{0, 100, 9, 3}, buckets: h.buckets}
	d := later.since(h)
	if d.waits() != 12 || d.counts[1] != 10 || d.counts[3] != 2 {
		t.Errorf("since = %v, want the 12 waits recorded in between", d.counts)
	}
	if s := d.add(h); s.waits() != later.waits() {
		t.Errorf("add = %d waits, want %d", s.waits(), later.waits())
	}
}

// More goroutines than threads, each ready at once, make the runtime
// record waits: what the bench reads is the process's own.
func TestSchedHistSeesGoroutinesWaitingToRun(t *testing.T) {
	before := readSchedHist()
	if len(before.counts) == 0 {
		t.Fatal("the runtime reports no scheduling latencies")
	}
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	d := readSchedHist().since(before)
	if d.waits() == 0 || d.total() <= 0 {
		t.Fatalf("no waits recorded: %d waits, %v s", d.waits(), d.total())
	}
}
