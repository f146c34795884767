package iceberg

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

// tableLocks orders the commits a leader plans for one table. A commit
// holds its tables from planning until its entry applied and its answer
// is written, so the next one plans against the pointer it moved. Without
// it, two commits racing for a table each wrote and synced a metadata
// file, and the one whose entry came second failed in the state machine
// and deleted its file; now the second checks its requirements against
// the new pointer: it fails before writing anything, or commits if they
// still hold. The state machine still checks every entry's base pointer,
// so this only saves work: a commit planned elsewhere (a cross-format
// transaction) is as safe as before.
type tableLocks struct {
	mu   sync.Mutex
	held map[string]*tableLock
}

type tableLock struct {
	sem  chan struct{}
	refs int
}

// lockedKey holds, in the request context, the release of a write's
// table locks.
const lockedKey = "iceberg.locked"

func (r ref) lockKey() string {
	return strings.Join(append(r.path(), r.name), "\x00")
}

// lockTables takes the locks of refs' tables, in one order so that two
// transactions never wait on each other, and leaves their release for
// unlockTables. It gives up when the request ends.
func (s *Server) lockTables(c echo.Context, refs ...ref) error {
	keys := make([]string, 0, len(refs))
	for _, r := range refs {
		keys = append(keys, r.lockKey())
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var got []string
	release := func() {
		for _, k := range got {
			s.locks.release(k)
		}
	}
	for _, k := range keys {
		if err := s.locks.acquire(c.Request().Context(), k); err != nil {
			release()
			return err
		}
		got = append(got, k)
	}
	c.Set(lockedKey, release)
	return nil
}

// unlockTables releases what lockTables took for the request.
func unlockTables(c echo.Context) {
	if release, ok := c.Get(lockedKey).(func()); ok {
		c.Set(lockedKey, nil)
		release()
	}
}

func (l *tableLocks) acquire(ctx context.Context, key string) error {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*tableLock{}
	}
	tl := l.held[key]
	if tl == nil {
		tl = &tableLock{sem: make(chan struct{}, 1)}
		l.held[key] = tl
	}
	tl.refs++
	l.mu.Unlock()
	select {
	case tl.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		l.drop(key, tl)
		return ctx.Err()
	}
}

func (l *tableLocks) release(key string) {
	l.mu.Lock()
	tl := l.held[key]
	l.mu.Unlock()
	<-tl.sem
	l.drop(key, tl)
}

// drop forgets a lock no request holds or waits for.
func (l *tableLocks) drop(key string, tl *tableLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tl.refs--; tl.refs == 0 {
		delete(l.held, key)
	}
}
