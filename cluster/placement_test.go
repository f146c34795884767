package cluster

import (
	"testing"
	"time"
)

func TestPlacementTargetIsTheFollowerThatBringsNearlyAllRequests(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts map[string]int
		want   string
	}{
		{"one follower brings them all", map[string]int{"b": 1000}, "b"},
		{"90% at one follower", map[string]int{"a": 50, "b": 900, "c": 50}, "b"},
		{"spread over the nodes", map[string]int{"a": 400, "b": 400, "c": 400}, ""},
		{"two clients at two followers", map[string]int{"b": 600, "c": 600}, ""},
		{"89% is not enough", map[string]int{"a": 110, "b": 890}, ""},
		{"too few requests", map[string]int{"b": 999}, ""},
		{"the leader's own clients", map[string]int{"a": 1000}, ""},
		{"names beyond the bound", map[string]int{"": 1000}, ""},
		{"nothing", nil, ""},
	} {
		if got := placementTarget("a", tc.counts, 1000, placementShare); got != tc.want {
			t.Errorf("%s: target %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPlacementCountsBoundedNames(t *testing.T) {
	var p placement
	for i := 0; i < 3*placementKeys; i++ {
		p.note(string(rune('A' + i)))
	}
	p.note("A")
	counts := p.take()
	if len(counts) != placementKeys+1 || counts["A"] != 2 || counts[""] != 2*placementKeys {
		t.Fatalf("counts %v: want %d names, A twice and the rest under \"\"", counts, placementKeys)
	}
	if len(p.take()) != 0 {
		t.Fatal("take does not start a new window")
	}
}

// The gate counts only windows this node led through, in one term; a
// leader that took over from another waits the cooldown first, and so
// does a leader whose own move failed.
func TestPlacementGateWaitsOutTheCooldownAfterLeadershipChanges(t *testing.T) {
	const window, cooldown = 10 * time.Second, 5 * time.Minute
	t0 := time.Unix(1_800_000_000, 0)
	at := func(windows int) time.Time { return t0.Add(time.Duration(windows) * window) }
	steps := []struct {
		name     string
		windows  int
		term     uint64
		sawOther bool
		counts   bool
		left     time.Duration // when it counts
		move     bool
	}{
		{"following", 1, 0, false, false, 0, false},
		{"first window led: it began before", 2, 3, false, false, 0, false},
		{"a new cluster's first leader, a full window", 3, 3, false, true, 0, true},
		{"after its own (failed) move", 4, 3, false, true, cooldown - window, false},
		{"the cooldown after its move has passed", 4 + 30, 3, false, true, 0, false},
		{"leadership lost", 35, 0, true, false, 0, false},
		{"leading again after another led", 36, 5, true, false, 0, false},
		{"a window later, within the cooldown", 37, 5, true, true, cooldown - window, false},
		{"just before the cooldown ends", 36 + 29, 5, true, true, window, false},
		{"the cooldown has passed", 36 + 30, 5, true, true, 0, false},
		{"a new term at once: a fresh start", 36 + 31, 6, true, false, 0, false},
	}
	var g placementGate
	for _, s := range steps {
		now := at(s.windows)
		if got := g.counts(now, s.term, s.sawOther, cooldown); got != s.counts {
			t.Fatalf("%s: counts = %v, want %v", s.name, got, s.counts)
		}
		if !s.counts {
			continue
		}
		if left := g.waitLeft(now, cooldown); left != s.left {
			t.Fatalf("%s: wait left %v, want %v", s.name, left, s.left)
		}
		if s.move {
			g.moved(now)
		}
	}
}
