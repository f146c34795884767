package iceberg

import (
	"context"
	"errors"
	"testing"
)

// A commit waiting for its table gives up when its request ends, and a
// lock nobody holds or waits for is forgotten.
func TestTableLocksWaitAndForget(t *testing.T) {
	var l tableLocks
	if err := l.acquire(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { got <- l.acquire(ctx, "t") }()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose request ended got %v", err)
	}
	if err := l.acquire(context.Background(), "u"); err != nil {
		t.Fatal("another table waited on this one:", err)
	}
	l.release("u")
	l.release("t")
	if len(l.held) != 0 {
		t.Fatalf("locks left behind: %v", l.held)
	}
	if err := l.acquire(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	l.release("t")
}
