package cluster

import "testing"

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
