package fsm_test

import (
	"sync"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// Readers walk whatever State they loaded while the apply loop keeps
// changing the same tables; under -race this fails if an applier mutates
// anything a published State can reach.
func TestReadersDuringApply(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	ext := e.createExternal("unity", "default", "x")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads [4]int
	for r := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st := e.m.State()
				for _, s := range st.Schemas("unity", "", 0) {
					for _, x := range st.Tables("unity", s.Name, "", 0) {
						n := len(x.ETag()) + len(x.UnbackfilledCommits()) + int(x.LatestVersion())
						for k, v := range x.Properties {
							n += len(k) + len(v)
						}
						n += len(x.ColumnNames) + len(x.PartitionColumns) + len(x.Columns)
						if x.Comment != nil {
							n += len(*x.Comment)
						}
						if x.Uniform != nil {
							n += int(x.Uniform.ConvertedDeltaVersion)
						}
						reads[r] += n
					}
				}
				if _, ok := st.StagingByLocation(tb.Location); ok {
					reads[r]++
				}
			}
		}()
	}
	v := int64(1)
	for i := range 300 {
		switch i % 6 {
		case 0, 1, 2:
			e.changed(e.addCommit(tb, v))
			v++
		case 3:
			e.ok(e.backfill(tb, v-1))
		case 4:
			e.changed(e.upd(tb, func(c *fsm.UpdateTable) {
				c.SetProperties = &map[string]string{"i": string(rune('a' + i%26))}
				c.SetTableComment = ptr("c")
				c.SetPartitionColumns = &[]string{"id"}
			}))
		case 5:
			e.changed(e.upd(ext, func(c *fsm.UpdateTable) {
				c.RemoveProperties = &[]string{"i"}
				c.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: int64(i), LastCommitTimestampMs: 1}
			}))
		}
	}
	close(stop)
	wg.Wait()
	if e.reload(tb).LatestVersion() != v-1 {
		t.Fatalf("latest = %d, want %d", e.reload(tb).LatestVersion(), v-1)
	}
}
