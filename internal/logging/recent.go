package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Record is one recent warning or error.
type Record struct {
	Time    time.Time         `json:"time"`
	Level   string            `json:"level"`
	Message string            `json:"message"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// Recent keeps the last warnings and errors logged, newest last.
type Recent struct {
	mu   sync.Mutex
	size int
	buf  []Record
	next int // where the next record goes once buf is full
}

// NewRecent keeps the last size records (0: 50).
func NewRecent(size int) *Recent {
	if size <= 0 {
		size = 50
	}
	return &Recent{size: size}
}

func (r *Recent) add(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) < r.size {
		r.buf = append(r.buf, rec)
		return
	}
	r.buf[r.next] = rec
	r.next = (r.next + 1) % r.size
}

// Records returns the kept records, oldest first.
func (r *Recent) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Record, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// teeHandler passes every record on and keeps warnings and errors.
type teeHandler struct {
	next   slog.Handler
	recent *Recent
	attrs  []slog.Attr // added with WithAttrs, kept with each record
}

func (h *teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.recent.add(h.record(r))
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *teeHandler) record(r slog.Record) Record {
	rec := Record{Time: r.Time, Level: r.Level.String(), Message: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	return rec
}

func (h *teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &teeHandler{next: h.next.WithAttrs(as), recent: h.recent, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

// WithGroup keeps records of a group unqualified: raftcat's loggers use
// no groups.
func (h *teeHandler) WithGroup(name string) slog.Handler {
	return &teeHandler{next: h.next.WithGroup(name), recent: h.recent, attrs: h.attrs}
}
