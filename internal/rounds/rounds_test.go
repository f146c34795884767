package rounds

import (
	"context"
	"testing"
)

// Callers that arrive while a round runs share the next one, which runs
// after all of them arrived.
func TestCallersArrivingDuringARoundShareTheNext(t *testing.T) {
	started, release := make(chan struct{}, 2), make(chan struct{})
	runs := 0
	b := New(func() (uint64, error) {
		started <- struct{}{}
		<-release
		runs++
		return uint64(runs), nil
	})
	first := b.Ticket()
	<-started // the first round runs: callers from now on wait for the next
	var later []*Round
	for range 5 {
		later = append(later, b.Ticket())
	}
	for _, r := range later {
		if r != later[0] || r == first {
			t.Fatal("callers that arrived together do not share one round after the first")
		}
	}
	close(release)
	ctx := context.Background()
	if v, err := first.Wait(ctx); v != 1 || err != nil {
		t.Fatalf("first round answered %d, %v", v, err)
	}
	for _, r := range later {
		if v, err := r.Wait(ctx); v != 2 || err != nil {
			t.Fatalf("later round answered %d, %v; want the second run's 2", v, err)
		}
	}
	if b.Runs() != 2 {
		t.Fatalf("%d runs, want 2", b.Runs())
	}
	if v, _ := Decided(7).Wait(ctx); v != 7 {
		t.Fatalf("a decided round answered %d", v)
	}
}

// A caller stops waiting when its context ends.
func TestWaitEndsWithTheContext(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	b := New(func() (uint64, error) { <-block; return 0, nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Ticket().Wait(ctx); err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
