package rolling

import (
	"math"
	"time"
)

// Point is what happened during one step of a series.
type Point struct {
	Start time.Time // the step's start
	Count uint64    // events counted during the step
	// Rate is Count per second over the part of the step the window
	// covers: the newest step has only begun, the oldest may have been
	// partly forgotten.
	Rate float64
	// Observed is how many of the events came with a latency, and P99 the
	// 99th percentile of those latencies (0 when there were none).
	Observed uint64
	P99      time.Duration
}

// Series returns the window as points of step (rounded to whole slots),
// oldest first, the last one holding now. Steps are aligned on multiples
// of step, so a point keeps its start from one call to the next.
func (w *Window) Series(now time.Time, step time.Duration) []Point {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := max(1, int64(step/w.width))
	last := w.number(now)
	oldest := max(0, last-int64(len(w.slots))+1)
	first := oldest - oldest%k
	var out []Point
	for start := first; start <= last; start += k {
		out = append(out, w.point(start, max(start, oldest), min(start+k-1, last)))
	}
	return out
}

// point sums the slots from..to (inclusive) into the point starting at
// slot start.
func (w *Window) point(start, from, to int64) Point {
	p := Point{Start: time.Unix(0, start*int64(w.width))}
	var h histogram
	for n := from; n <= to; n++ {
		if s := w.held(n); s != nil {
			p.Count += s.count
			h.merge(s.lat)
		}
	}
	p.Rate = float64(p.Count) / (float64(to-from+1) * w.width.Seconds())
	p.Observed, p.P99 = h.total, h.quantile(0.99)
	return p
}

// Quantile returns the q-quantile (0 < q <= 1) of the latencies observed
// during the last span before now (at least one slot, at most the
// window), and how many latencies it is computed from.
func (w *Window) Quantile(now time.Time, span time.Duration, q float64) (time.Duration, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	last := w.number(now)
	k := min(int64(len(w.slots)), max(1, int64((span+w.width-1)/w.width)))
	var h histogram
	for n := max(0, last-k+1); n <= last; n++ {
		if s := w.held(n); s != nil {
			h.merge(s.lat)
		}
	}
	return h.quantile(q), h.total
}

// Rate returns the events per second during the last span before now.
func (w *Window) Rate(now time.Time, span time.Duration) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	last := w.number(now)
	k := min(int64(len(w.slots)), max(1, int64((span+w.width-1)/w.width)))
	from := max(0, last-k+1)
	return w.point(from, from, last).Rate
}

// held returns the slot holding slot number n, or nil if the ring holds
// another one there (n was forgotten, or nothing happened during it).
func (w *Window) held(n int64) *slot {
	if s := &w.slots[n%int64(len(w.slots))]; s.n == n {
		return s
	}
	return nil
}

// Latencies are kept in log-scale buckets, four per doubling, from a
// microsecond up: a quantile is exact to within a bucket (19%).
const (
	bucketsPerOctave = 4
	octaves          = 26 // up to about 67 s; longer latencies share the last bucket
	numBuckets       = bucketsPerOctave*octaves + 1
	minBound         = time.Microsecond
)

// histogram counts latencies by bucket.
type histogram struct {
	counts [numBuckets]uint32
	total  uint64
	max    time.Duration
}

func (h *histogram) observe(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.total++
	h.max = max(h.max, d)
}

func (h *histogram) reset() { *h = histogram{} }

// merge adds o's latencies (o may be nil).
func (h *histogram) merge(o *histogram) {
	if o == nil {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding the q-quantile,
// or the largest latency seen if that is smaller (0 when there is none).
func (h *histogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := max(1, uint64(math.Ceil(q*float64(h.total))))
	var seen uint64
	for i, c := range h.counts[:numBuckets-1] {
		if seen += uint64(c); seen >= rank {
			return min(upperBound(i), h.max)
		}
	}
	return h.max
}

// bucketOf returns the bucket of a latency: bucket i holds the latencies
// above upperBound(i-1) up to upperBound(i).
func bucketOf(d time.Duration) int {
	if d <= minBound {
		return 0
	}
	i := int(math.Ceil(math.Log2(float64(d)/float64(minBound)) * bucketsPerOctave))
	return min(i, numBuckets-1)
}

func upperBound(i int) time.Duration {
	return time.Duration(float64(minBound) * math.Exp2(float64(i)/bucketsPerOctave))
}
