package fsm_test

import (
	"fmt"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// BenchmarkApplyCommit is the state machine's share of one Delta commit:
// decode the entry, check the commit log rules, clone the table, insert it.
// It runs on every replica for every commit.
func BenchmarkApplyCommit(b *testing.B) {
	e := newEnv(b)
	tb := e.createManaged("unity", "default", "t")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := int64(i + 1)
		cmd := e.upd(tb, func(c *fsm.UpdateTable) {
			c.AddCommit = &fsm.AddCommit{Commit: commitOf(v, "a")}
			if v > 1 {
				c.SetLatestBackfilled = ptr(v - 1)
			}
		})
		if res := e.apply(cmd); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}

// BenchmarkLoadTable looks a table up by name (what every load and commit
// does first) in catalogs of growing size: the cost must not grow with the
// number of tables beyond the radix tree's key length.
func BenchmarkLoadTable(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("tables=%d", n), func(b *testing.B) {
			e := newEnv(b)
			for s := 0; s < 10; s++ {
				e.createSchema("unity", fmt.Sprintf("s%d", s), "")
			}
			for i := 0; i < n; i++ {
				e.createManaged("unity", fmt.Sprintf("s%d", i%10), fmt.Sprintf("t%07d", i))
			}
			st := e.m.State()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := (i * 7919) % n
				if _, ok := st.Table("unity", fmt.Sprintf("s%d", j%10), fmt.Sprintf("t%07d", j)); !ok {
					b.Fatal("missing table")
				}
			}
		})
	}
}
