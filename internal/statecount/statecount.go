// Package statecount counts the objects of a catalog state for metrics
// and the status page, without walking a large catalog on every look.
package statecount

import (
	"maps"
	"sync"
	"time"

	"github.com/raftcat/raftcat/fsm"
)

// Counting tables by format walks them all: in a catalog of more than
// smallCatalog tables it is redone at most once per every, and only
// when the state changed. The kind counts are kept by the state itself.
const (
	smallCatalog = 10_000
	every        = 10 * time.Second
)

// Counter caches the tables by format of the latest state it counted.
type Counter struct {
	mu     sync.Mutex
	of     *fsm.State
	at     time.Time
	tables map[string]int
}

// Counts returns the objects of st by kind, and its tables by format,
// which may be those of a state up to `every` older. The maps are the
// caller's.
func (c *Counter) Counts(st *fsm.State) (objects, tables map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	objects = st.ObjectCounts()
	if c.of != st && (c.of == nil || objects["table"] < smallCatalog || time.Since(c.at) >= every) {
		c.of, c.at, c.tables = st, time.Now(), st.TablesByFormat()
	}
	return objects, maps.Clone(c.tables)
}
