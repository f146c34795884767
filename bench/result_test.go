package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSummariseCountsCommitsPerClient: the fewest and most acknowledged
// commits of one client, errors and conflicts aside.
func TestSummariseCountsCommitsPerClient(t *testing.T) {
	at := time.Unix(0, 0)
	ok := func(conflicts int) sample {
		return sample{start: at, end: at.Add(time.Millisecond), conflicts: conflicts}
	}
	failed := sample{start: at, end: at.Add(time.Millisecond), err: errors.New("status 503")}
	per := [][]sample{
		{ok(0), ok(2), ok(0)},
		{ok(1), failed},
		{failed},
	}
	r := summarise("raftcat", per, time.Second)
	if r.Commits != 4 || r.Errors != 2 || r.Conflicts != 3 {
		t.Fatalf("commits %d errors %d conflicts %d, want 4, 2, 3", r.Commits, r.Errors, r.Conflicts)
	}
	if r.ClientCommitsMin != 0 || r.ClientCommitsMax != 3 {
		t.Fatalf("commits per client %d-%d, want 0-3", r.ClientCommitsMin, r.ClientCommitsMax)
	}
	if r := summarise("raftcat", per[:2], time.Second); r.ClientCommitsMin != 1 {
		t.Fatalf("fewest commits per client %d, want 1", r.ClientCommitsMin)
	}
}

// TestTextComparesWithPostgres: a report with PostgreSQL prints its lines
// and raftcat's ratios over it, overall and by round.
func TestTextComparesWithPostgres(t *testing.T) {
	rep := Report{Clients: 4, Tables: 2, Target: "spread", DurationS: 2, Rounds: 2,
		Raftcat:                 &Result{System: "raftcat", CommitsPerSec: 300},
		Postgres:                &Result{System: "postgres (primary + 2 sync replicas, ANY 1)", CommitsPerSec: 200},
		PostgresThroughputRatio: 1.5, PostgresP50Ratio: 0.5, PostgresP99Ratio: 0.25, PostgresRoundRatios: []float64{1.25, 1.75}}
	text := rep.Text()
	for _, want := range []string{
		"\npostgres (primary + 2 sync replicas, ANY 1)    200 commits/s",
		"\npostgres (primary + 2 sync replicas, ANY 1) requests:",
		"\nraftcat/postgres: throughput x1.50, p50 x0.50, p99 x0.25\n",
		"\nraftcat/postgres throughput ratio by round: x1.25 x1.75\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "raftcat/etcd") || strings.Contains(text, "iceberg/delta") {
		t.Errorf("comparisons not run printed:\n%s", text)
	}
}

// A table with one writer may end each window with that writer's commit
// applied but unacknowledged, however many tables there are; a table
// shared by writers may end with one of each.
func TestVerifyAllowsEachWritersCommitPerWindow(t *testing.T) {
	tc := make(tableCounts, 1024)
	tc[0].Store(1276)
	at := func(v int64) func(int) (int64, error) {
		return func(table int) (int64, error) {
			if table == 0 {
				return v, nil
			}
			return 0, nil
		}
	}
	sixtyFour := inFlight{writers: 64, windows: 3}
	if err := tc.check(at(1279), sixtyFour); err != nil {
		t.Fatalf("one writer, three windows, three commits in flight: %v", err)
	}
	if err := tc.check(at(1280), sixtyFour); err == nil {
		t.Fatal("four commits unacknowledged from one writer in three windows passed")
	}
	if got := (inFlight{writers: 32, windows: 3}).perTable(16); got != 6 {
		t.Fatalf("two writers per table, three windows: bound %d, want 6", got)
	}
}
