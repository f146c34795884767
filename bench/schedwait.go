package bench

import (
	"math"
	"runtime/metrics"
)

// The bench's writers share the machine, and their process, with each
// other: a writer whose answer has arrived may still wait for a thread to
// run on. How long the process's goroutines waited to run, once ready,
// is read from the Go runtime (/sched/latencies:seconds) at a window's
// start and end. An HTTP client that hands each exchange to goroutines of
// its own waits more often per request than one that reads its answer
// itself, and on a busy process each wait costs.

const schedLatencies = "/sched/latencies:seconds"

// schedHist is a histogram of waits: counts per bucket, and the buckets'
// boundaries (len(counts)+1).
type schedHist struct {
	counts  []uint64
	buckets []float64
}

// readSchedHist reads the process's histogram of waits so far.
func readSchedHist() schedHist {
	s := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return schedHist{}
	}
	h := s[0].Value.Float64Histogram()
	return schedHist{counts: append([]uint64(nil), h.Counts...), buckets: h.Buckets}
}

// since is the waits recorded after earlier.
func (h schedHist) since(earlier schedHist) schedHist {
	if len(earlier.counts) != len(h.counts) {
		return schedHist{}
	}
	d := schedHist{counts: make([]uint64, len(h.counts)), buckets: h.buckets}
	for i := range h.counts {
		d.counts[i] = h.counts[i] - earlier.counts[i]
	}
	return d
}

// add sums two histograms of the same buckets (either may be empty).
func (h schedHist) add(o schedHist) schedHist {
	switch {
	case len(o.counts) == 0:
		return h
	case len(h.counts) == 0:
		return o
	case len(h.counts) != len(o.counts):
		return h
	}
	s := schedHist{counts: make([]uint64, len(h.counts)), buckets: h.buckets}
	for i := range h.counts {
		s.counts[i] = h.counts[i] + o.counts[i]
	}
	return s
}

// waits counts the waits.
func (h schedHist) waits() uint64 {
	var n uint64
	for _, c := range h.counts {
		n += c
	}
	return n
}

// total is the time waited in seconds, each wait taken at its bucket's
// middle (its finite edge for the open-ended ones).
func (h schedHist) total() float64 {
	var sum float64
	for i, c := range h.counts {
		sum += float64(c) * h.middle(i)
	}
	return sum
}

func (h schedHist) middle(i int) float64 {
	lo, hi := h.buckets[i], h.buckets[i+1]
	switch {
	case math.IsInf(lo, -1):
		return max(hi, 0)
	case math.IsInf(hi, 1):
		return lo
	}
	return (lo + hi) / 2
}

// quantile is the upper edge of the bucket holding the q-th wait (its
// lower edge if that bucket is open-ended); 0 without waits.
func (h schedHist) quantile(q float64) float64 {
	n := h.waits()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= max(rank, 1) {
			if math.IsInf(h.buckets[i+1], 1) {
				return h.buckets[i]
			}
			return h.buckets[i+1]
		}
	}
	return h.buckets[len(h.buckets)-1]
}
