package httpapi

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// FailureLogInterval is how often a server error a client can provoke at
// will is logged per subject (see logFailure and Throttled).
const FailureLogInterval = time.Minute

// maxSubjects bounds the subjects a throttled logger remembers; past it,
// records about new subjects are written without being counted.
const maxSubjects = 4096

// logFailure logs a request that failed with a server error. A domain
// error answered with one (a commit whose state is unknown) is the
// answer the protocol prescribes, and any client may provoke it as often
// as it likes: it is logged once per FailureLogInterval per code and
// path (a path names the table), with the count of those held back.
func (s *Server) logFailure(c echo.Context, p Problem, err error) {
	args := []any{"method", c.Request().Method, "path", c.Request().URL.Path, "err", err}
	if p.Code == 0 {
		s.log.ErrorContext(c.Request().Context(), "request failed", args...)
		return
	}
	s.failLog.ErrorContext(c.Request().Context(), "request failed", append(args, "code", p.Code.String())...)
}

// Throttled returns a logger that writes a record at most once per
// interval for each subject: the record's message and the values of the
// attributes named by keys. A record carrying none of them is written as
// usual. The first record written after others were held back carries
// "suppressed", their number.
func Throttled(l *slog.Logger, interval time.Duration, keys ...string) *slog.Logger {
	return slog.New(&throttleHandler{next: l.Handler(), st: newThrottle(interval, time.Now), keys: keys})
}

type throttleHandler struct {
	next slog.Handler
	st   *throttle
	keys []string
}

func (h *throttleHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *throttleHandler) Handle(ctx context.Context, r slog.Record) error {
	key, ok := h.subject(r)
	if !ok {
		return h.next.Handle(ctx, r)
	}
	admit, held := h.st.admit(key)
	if !admit {
		return nil
	}
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", held))
	}
	return h.next.Handle(ctx, r)
}

// subject is the throttling key of a record; ok is false when the record
// carries none of the key attributes.
func (h *throttleHandler) subject(r slog.Record) (key string, ok bool) {
	vals := make([]string, len(h.keys))
	r.Attrs(func(a slog.Attr) bool {
		if i := slices.Index(h.keys, a.Key); i >= 0 {
			vals[i], ok = a.Value.String(), true
		}
		return true
	})
	return r.Message + "\x00" + strings.Join(vals, "\x00"), ok
}

func (h *throttleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &throttleHandler{next: h.next.WithAttrs(as), st: h.st, keys: h.keys}
}

func (h *throttleHandler) WithGroup(name string) slog.Handler {
	return &throttleHandler{next: h.next.WithGroup(name), st: h.st, keys: h.keys}
}

// throttle admits one event per interval for each subject and counts the
// others.
type throttle struct {
	interval time.Duration
	now      func() time.Time
	mu       sync.Mutex
	subjects map[string]*subject
}

type subject struct {
	last time.Time // when an event was last admitted
	held int       // events held back since
}

func newThrottle(interval time.Duration, now func() time.Time) *throttle {
	return &throttle{interval: interval, now: now, subjects: map[string]*subject{}}
}

// admit reports whether an event about key is admitted now, and how many
// were held back since the last one admitted.
func (t *throttle) admit(key string) (ok bool, held int) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	sub := t.subjects[key]
	if sub != nil && now.Sub(sub.last) < t.interval {
		sub.held++
		return false, 0
	}
	if sub == nil {
		if sub = t.track(key, now); sub == nil {
			return true, 0
		}
	}
	held, sub.last, sub.held = sub.held, now, 0
	return true, held
}

// track remembers a new subject, first forgetting the quiet ones when
// the table is full; it returns nil when every remembered one is active.
func (t *throttle) track(key string, now time.Time) *subject {
	if len(t.subjects) >= maxSubjects {
		for k, s := range t.subjects {
			if now.Sub(s.last) >= t.interval {
				delete(t.subjects, k)
			}
		}
	}
	if len(t.subjects) >= maxSubjects {
		return nil
	}
	sub := &subject{}
	t.subjects[key] = sub
	return sub
}
