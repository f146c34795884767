package deltalog

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/raftcat/raftcat/storage"
)

// readParallelism bounds concurrent object reads of one operation.
const readParallelism = 16

// forEach calls fn for 0..n-1 with at most readParallelism calls at a
// time, and stops starting new ones after the first error, which it
// returns (preferring a real error to the cancellations it caused).
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	sem := make(chan struct{}, readParallelism)
	var wg sync.WaitGroup
	started := 0
	for ; started < n && ctx.Err() == nil; started++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if errs[i] = fn(ctx, i); errs[i] != nil {
				cancel()
			}
		}(started)
	}
	wg.Wait()
	if err := firstError(errs); err != nil || started == n {
		return err
	}
	return ctx.Err()
}

func firstError(errs []error) error {
	var ctxErr error
	for _, err := range errs {
		switch {
		case err == nil:
		case isContextErr(err):
			ctxErr = cmpOr(ctxErr, err)
		default:
			return err
		}
	}
	return ctxErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// read reads one log file; a missing file is corruption, since the
// listing (or the catalog) named it.
func (l *Log) read(ctx context.Context, loc string) ([]byte, error) {
	data, err := l.store.Read(ctx, loc)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, corruptf("%s is missing: %v", loc, err)
	}
	if err != nil {
		return nil, fmt.Errorf("deltalog: read %s: %w", loc, err)
	}
	return data, nil
}
