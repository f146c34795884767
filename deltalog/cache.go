package deltalog

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// DefaultCacheBytes is the bound of NewCache(0).
const DefaultCacheBytes = 256 << 20

// entry kinds
const (
	kindSnapshot = iota
	kindICT
)

// cacheKey names one cached value.
type cacheKey struct {
	loc     string
	kind    int
	version int64
}

type cacheEntry struct {
	key  cacheKey
	sig  string // the log file the value was built from
	val  any
	size int64
}

// flightKey names one build: a value and the file it is built from.
type flightKey struct {
	cacheKey
	sig string
}

// flight is one build in progress; waiters block on done.
type flight struct {
	done chan struct{}
	val  any
	err  error
}

// Cache holds snapshots and in-commit timestamps keyed by (table
// location, version), in an LRU bounded by the approximate byte size of
// the entries. Versions are immutable, so entries never go stale (each
// entry also records the log file it came from, and a table re-created at
// the same location misses). It is safe for concurrent use, and
// concurrent requests for the same missing entry do the work once.
type Cache struct {
	max int64

	mu      sync.Mutex
	bytes   int64
	lru     *list.List // front: most recently used
	items   map[cacheKey]*list.Element
	snaps   map[string]map[int64]struct{} // location → cached snapshot versions
	flights map[flightKey]*flight
	hits    uint64
	misses  uint64
}

// NewCache returns a cache bounded to about maxBytes; 0 (or less) means
// DefaultCacheBytes.
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{
		max:     maxBytes,
		lru:     list.New(),
		items:   map[cacheKey]*list.Element{},
		snaps:   map[string]map[int64]struct{}{},
		flights: map[flightKey]*flight{},
	}
}

// Stats returns the number of entries, their estimated size, and the
// lookups that were served from the cache (hits, including waiting for a
// concurrent build) or not (misses).
func (c *Cache) Stats() (entries int, bytes int64, hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.bytes, c.hits, c.misses
}

// do returns the value for k built from the file sig, from the cache or
// by calling build once however many callers ask at the same time. build
// returns the value and its estimated size.
func (c *Cache) do(ctx context.Context, k cacheKey, sig string, build func() (any, int64, error)) (any, error) {
	for {
		c.mu.Lock()
		if v, ok := c.lookupLocked(k, sig); ok {
			c.hits++
			c.mu.Unlock()
			return v, nil
		}
		fk := flightKey{k, sig}
		if f, ok := c.flights[fk]; ok {
			c.mu.Unlock()
			v, err, retry := c.wait(ctx, f)
			if retry {
				continue
			}
			return v, err
		}
		c.misses++
		f := &flight{done: make(chan struct{})}
		c.flights[fk] = f
		c.mu.Unlock()
		return c.lead(fk, f, build)
	}
}

// wait waits for another caller's build. It asks for a retry when that
// build failed only because its caller gave up.
func (c *Cache) wait(ctx context.Context, f *flight) (any, error, bool) {
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err(), false
	}
	if f.err != nil && isContextErr(f.err) && ctx.Err() == nil {
		return nil, nil, true
	}
	if f.err == nil {
		c.mu.Lock()
		c.hits++
		c.mu.Unlock()
	}
	return f.val, f.err, false
}

// lead runs the build, stores a success and wakes the waiters.
func (c *Cache) lead(fk flightKey, f *flight, build func() (any, int64, error)) (v any, err error) {
	defer func() {
		c.mu.Lock()
		delete(c.flights, fk)
		c.mu.Unlock()
		f.val, f.err = v, err
		close(f.done)
	}()
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("deltalog: panic while building a cache entry")
			panic(p)
		}
	}()
	v, size, err := build()
	if err == nil {
		c.put(fk.cacheKey, fk.sig, v, size)
	}
	return v, err
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lookupLocked returns a fresh entry and marks it used; an entry built
// from another file is dropped.
func (c *Cache) lookupLocked(k cacheKey, sig string) (any, bool) {
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if e.sig != sig {
		c.removeLocked(el)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return e.val, true
}

// put stores a value, evicting the least recently used entries beyond the
// bound. A value larger than the whole bound is not kept.
func (c *Cache) put(k cacheKey, sig string, v any, size int64) {
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.removeLocked(el)
	}
	c.items[k] = c.lru.PushFront(&cacheEntry{key: k, sig: sig, val: v, size: size})
	c.bytes += size
	if k.kind == kindSnapshot {
		c.indexSnapshot(k)
	}
	for c.bytes > c.max {
		c.removeLocked(c.lru.Back())
	}
}

func (c *Cache) indexSnapshot(k cacheKey) {
	vs := c.snaps[k.loc]
	if vs == nil {
		vs = map[int64]struct{}{}
		c.snaps[k.loc] = vs
	}
	vs[k.version] = struct{}{}
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.items, e.key)
	c.bytes -= e.size
	if e.key.kind != kindSnapshot {
		return
	}
	if vs := c.snaps[e.key.loc]; vs != nil {
		delete(vs, e.key.version)
		if len(vs) == 0 {
			delete(c.snaps, e.key.loc)
		}
	}
}

// get returns a fresh cached value without building; it counts as a hit
// or miss.
func (c *Cache) get(k cacheKey, sig string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lookupLocked(k, sig)
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	return v, ok
}

// snapshotBase returns the newest cached snapshot of loc with a version in
// [from, below) whose log file is still sigOf(version). It does not count
// as a hit or miss.
func (c *Cache) snapshotBase(loc string, from, below int64, sigOf func(int64) string) (*Snapshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		best := c.newestSnapshotLocked(loc, from, below)
		if best < 0 {
			return nil, false
		}
		// A stale entry is dropped by the lookup; then try the next.
		if v, ok := c.lookupLocked(cacheKey{loc, kindSnapshot, best}, sigOf(best)); ok {
			return v.(*Snapshot), true
		}
	}
}

func (c *Cache) newestSnapshotLocked(loc string, from, below int64) int64 {
	best := int64(-1)
	for v := range c.snaps[loc] {
		if v >= from && v < below && v > best {
			best = v
		}
	}
	return best
}
