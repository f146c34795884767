package bench

import (
	"errors"
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
