package rolling

import (
	"sync"
	"testing"
	"time"
)

// t0 is a slot boundary for every width the tests use.
var t0 = time.Unix(1_700_000_000, 0)

func TestSeriesCountsEventsPerStep(t *testing.T) {
	w := New(time.Minute, time.Second)
	w.Add(t0, 3)
	w.Add(t0.Add(1500*time.Millisecond), 2)
	w.Add(t0.Add(5*time.Second), 10)
	pts := w.Series(t0.Add(9*time.Second), 5*time.Second)
	if len(pts) != 12 {
		t.Fatalf("got %d points, want 12 (a minute in steps of 5 s)", len(pts))
	}
	a, b := pts[len(pts)-2], pts[len(pts)-1]
	if !a.Start.Equal(t0) || a.Count != 5 || a.Rate != 1 {
		t.Errorf("step at t0 = %+v, want 5 events, 1/s", a)
	}
	if !b.Start.Equal(t0.Add(5*time.Second)) || b.Count != 10 || b.Rate != 2 {
		t.Errorf("newest step = %+v, want 10 events over the 5 s it has run, 2/s", b)
	}
}

func TestNewestStepRateIsOverTheTimeItHasRun(t *testing.T) {
	w := New(time.Minute, time.Second)
	w.Add(t0, 4)
	pts := w.Series(t0.Add(time.Second), 5*time.Second)
	if got := pts[len(pts)-1]; got.Count != 4 || got.Rate != 2 {
		t.Fatalf("newest step = %+v, want 4 events over 2 s", got)
	}
}

func TestOldSlotsAreForgotten(t *testing.T) {
	w := New(10*time.Second, time.Second)
	w.Add(t0, 7)
	w.Observe(t0, time.Second)
	now := t0.Add(10 * time.Second) // t0's slot is reused for this one
	w.Add(now, 1)
	for _, p := range w.Series(now, time.Second) {
		if p.Start.Equal(t0) {
			t.Fatalf("t0 is out of the window but still shows: %+v", p)
		}
	}
	if q, n := w.Quantile(now, time.Minute, 0.99); n != 0 || q != 0 {
		t.Fatalf("latency from a forgotten slot remains: %v from %d", q, n)
	}
	if r := w.Rate(now, time.Second); r != 1 {
		t.Fatalf("rate now = %v, want 1", r)
	}
}

func TestEventsOlderThanTheirSlotAreDropped(t *testing.T) {
	w := New(10*time.Second, time.Second)
	w.Add(t0.Add(10*time.Second), 1)
	w.Add(t0, 5) // same ring slot, ten seconds older
	if got := w.Rate(t0.Add(10*time.Second), 10*time.Second); got != 0.1 {
		t.Fatalf("rate = %v, want 0.1 (the late event dropped)", got)
	}
}

func TestP99IsWithinABucket(t *testing.T) {
	w := New(time.Minute, time.Second)
	for i := range 1000 {
		d := time.Millisecond
		if i >= 985 {
			d = 80 * time.Millisecond
		}
		w.Observe(t0.Add(time.Duration(i)*time.Millisecond), d)
	}
	q, n := w.Quantile(t0.Add(time.Second), time.Minute, 0.99)
	if n != 1000 || q < 80*time.Millisecond || q > 96*time.Millisecond {
		t.Fatalf("p99 = %v from %d, want 80ms..96ms from 1000", q, n)
	}
	pts := w.Series(t0.Add(time.Second), 5*time.Second)
	if p := pts[len(pts)-1]; p.Observed != 1000 || p.P99 != q {
		t.Fatalf("newest point = %+v, want p99 %v", p, q)
	}
}

func TestP99NeverExceedsTheLargestLatency(t *testing.T) {
	w := New(time.Minute, time.Second)
	w.Observe(t0, 1100*time.Microsecond)
	if q, _ := w.Quantile(t0, time.Second, 0.99); q != 1100*time.Microsecond {
		t.Fatalf("p99 of one latency = %v, want it exactly", q)
	}
	w.Observe(t0, 10*time.Minute) // beyond the last bucket's bound
	if q, _ := w.Quantile(t0, time.Second, 1); q != 10*time.Minute {
		t.Fatalf("max = %v, want 10m", q)
	}
}

func TestBucketsGrowByAQuarterOctave(t *testing.T) {
	for i := 1; i < numBuckets-1; i++ {
		if got := bucketOf(upperBound(i) - 1); got != i {
			t.Errorf("just below bound %d (%v) lands in bucket %d", i, upperBound(i), got)
		}
		if got := bucketOf(upperBound(i) + upperBound(i)/100); got != i+1 {
			t.Errorf("just above bound %d lands in bucket %d", i, got)
		}
	}
	if bucketOf(0) != 0 || bucketOf(time.Hour) != numBuckets-1 {
		t.Error("latencies out of range are not clamped to the end buckets")
	}
}

func TestConcurrentUse(t *testing.T) {
	w := New(time.Minute, time.Second)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				at := t0.Add(time.Duration(g*500+i) * time.Millisecond)
				w.Observe(at, time.Duration(i)*time.Microsecond)
				w.Series(at, 5*time.Second)
			}
		})
	}
	wg.Wait()
	var total uint64
	for _, p := range w.Series(t0.Add(4*time.Second), time.Second) {
		total += p.Count
	}
	if total != 4000 {
		t.Fatalf("counted %d events, want 4000", total)
	}
}
