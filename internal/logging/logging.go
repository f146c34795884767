// Package logging builds raftcat's loggers: text or JSON lines, each line
// about a request carrying that request's id, and a ring of the recent
// warnings and errors for the status page.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Formats are the values --log-format accepts.
var Formats = []string{"text", "json"}

// New returns a logger writing lines of format ("text" or "json") at
// level and above to w. Lines about a request carry its request_id, and
// warnings and errors are also kept in recent (nil: not kept).
func New(w io.Writer, format string, level slog.Level, recent *Recent) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(format) {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("unknown log format %q (want %s)", format, strings.Join(Formats, " or "))
	}
	if recent != nil {
		h = &teeHandler{next: h, recent: recent}
	}
	return slog.New(WithRequestIDs(h)), nil
}

type ctxKey struct{}

// ContextWithRequestID returns ctx carrying a request's id: log lines
// written with it (slog's ...Context methods) name the request.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// WithRequestIDs wraps h so that every record logged with a context that
// carries a request id gets a request_id attribute. Wrapping twice adds
// it once.
func WithRequestIDs(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
