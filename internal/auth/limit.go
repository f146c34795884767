package auth

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// FailureLimiter rate-limits failed authentications per client address:
// each failure spends one of Burst attempts, which come back at Rate per
// second. An address with none left is refused until one comes back.
type FailureLimiter struct {
	Rate  rate.Limit
	Burst int

	mu    sync.Mutex
	addrs map[string]*rate.Limiter
}

// maxAddrs bounds the addresses remembered; past it, those with all their
// attempts back are forgotten.
const maxAddrs = 10000

// NewFailureLimiter allows burst failures, then perSecond a second.
func NewFailureLimiter(perSecond float64, burst int) *FailureLimiter {
	return &FailureLimiter{Rate: rate.Limit(perSecond), Burst: burst, addrs: map[string]*rate.Limiter{}}
}

// Blocked reports whether addr has no attempt left at now, and when to
// retry.
func (f *FailureLimiter) Blocked(addr string, now time.Time) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.addrs[addr]
	if !ok {
		return false, 0
	}
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return false, 0
	}
	wait := time.Duration(math.Ceil((1-tokens)/float64(f.Rate)*1e3)) * time.Millisecond
	return true, max(wait, time.Second)
}

// Failed spends one attempt of addr.
func (f *FailureLimiter) Failed(addr string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.addrs[addr]
	if !ok {
		if len(f.addrs) >= maxAddrs {
			f.forget(now)
		}
		l = rate.NewLimiter(f.Rate, f.Burst)
		f.addrs[addr] = l
	}
	l.AllowN(now, 1)
}

func (f *FailureLimiter) forget(now time.Time) {
	for a, l := range f.addrs {
		if l.TokensAt(now) >= float64(f.Burst) {
			delete(f.addrs, a)
		}
	}
}
