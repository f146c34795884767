package relay

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"testing"
)

// Frames sent at once by many goroutines arrive whole, each once, each
// sender's in its order.
func TestCombinedWritesKeepFramesWholeAndOrdered(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	c := &combiner{w: a}
	const senders, each = 8, 50
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				payload := []byte{byte(s), byte(i)}
				if err := c.send(append(appendFrame(nil, uint64(s*each+i+1), len(payload)), payload...)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	next := make([]int, senders)
	br := bufio.NewReader(b)
	for range senders * each {
		id, payload, err := readFrame(br, 16)
		if err != nil {
			t.Fatal(err)
		}
		s, i := int(payload[0]), int(payload[1])
		if id != uint64(s*each+i+1) || i != next[s] {
			t.Fatalf("frame %d (sender %d, #%d) out of order or torn; expected #%d", id, s, i, next[s])
		}
		next[s]++
	}
	wg.Wait()
}

// After a write fails, that sender and every later one get the error, and
// nothing more is written; after close, sends are refused.
func TestACombinerStopsAtTheFirstWriteError(t *testing.T) {
	a, b := net.Pipe()
	b.Close()
	c := &combiner{w: a}
	if err := c.send([]byte("x")); err == nil {
		t.Fatal("a write to a closed pipe succeeded")
	}
	if err := c.send([]byte("y")); err == nil || errors.Is(err, errCombinerClosed) {
		t.Fatalf("a send after a failed write: %v, want the write's error", err)
	}
	c2 := &combiner{w: a}
	c2.close()
	if err := c2.send([]byte("z")); !errors.Is(err, errCombinerClosed) {
		t.Fatalf("a send after close: %v", err)
	}
}
