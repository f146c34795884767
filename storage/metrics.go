package storage

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Instrumented returns store with every operation timed into reg, as
// raftcat_storage_operation_duration_seconds by operation, storage kind
// (file, s3, gs, azblob) and result. The series of every operation's
// success on the storage kinds of roots (the node's storage root) exist
// from the start, at zero, so that a fresh node shows them.
func Instrumented(store ObjectStore, reg prometheus.Registerer, roots ...string) ObjectStore {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raftcat_storage_operation_duration_seconds",
		Help:    "Time of the object storage operations the catalog itself makes, by operation, storage kind and result.",
		Buckets: prometheus.ExponentialBuckets(0.0002, 2.5, 12)}, []string{"op", "storage", "result"})
	reg.MustRegister(h)
	for _, root := range roots {
		if ref, err := locate(root); err == nil {
			for _, op := range operations {
				h.WithLabelValues(op, ref.kind, result(nil))
			}
		}
	}
	return &instrumented{next: store, h: h}
}

// operations are the op label's values.
var operations = []string{"stat", "read", "list", "write", "delete", "sign"}

type instrumented struct {
	next ObjectStore
	h    *prometheus.HistogramVec
}

// timed starts timing one operation on loc; the function it returns,
// deferred, records it with the error it returned.
func (s *instrumented) timed(op, loc string) func(*error) {
	start := time.Now()
	return func(err *error) {
		kind := "unknown"
		if ref, lerr := locate(loc); lerr == nil {
			kind = ref.kind
		}
		s.h.WithLabelValues(op, kind, result(*err)).Observe(time.Since(start).Seconds())
	}
}

// result is the result label: ok, or the kind of failure.
func result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrExists):
		return "exists"
	}
	return "error"
}

func (s *instrumented) Stat(ctx context.Context, loc string) (_ ObjectInfo, err error) {
	defer s.timed("stat", loc)(&err)
	return s.next.Stat(ctx, loc)
}

func (s *instrumented) Read(ctx context.Context, loc string) (_ []byte, err error) {
	defer s.timed("read", loc)(&err)
	return s.next.Read(ctx, loc)
}

func (s *instrumented) ReadRange(ctx context.Context, loc string, off, n int64) (_ []byte, err error) {
	defer s.timed("read", loc)(&err)
	return s.next.ReadRange(ctx, loc, off, n)
}

func (s *instrumented) List(ctx context.Context, prefix string) (_ []ObjectInfo, err error) {
	defer s.timed("list", prefix)(&err)
	return s.next.List(ctx, prefix)
}

func (s *instrumented) Write(ctx context.Context, loc string, data []byte) (err error) {
	defer s.timed("write", loc)(&err)
	return s.next.Write(ctx, loc, data)
}

func (s *instrumented) Delete(ctx context.Context, loc string) (err error) {
	defer s.timed("delete", loc)(&err)
	return s.next.Delete(ctx, loc)
}

func (s *instrumented) SignedURL(ctx context.Context, loc string, expiry time.Duration) (_ string, err error) {
	defer s.timed("sign", loc)(&err)
	return s.next.SignedURL(ctx, loc, expiry)
}
