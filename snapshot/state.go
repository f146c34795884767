package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/raftcat/raftcat/fsm"
)

// WriteState streams a whole FSM state into w, record by record.
func WriteState(w io.Writer, st *fsm.State, h Header) error {
	sw, err := NewWriter(w, h)
	if err != nil {
		return err
	}
	if err := st.WriteRecords(sw.WriteRecord); err != nil {
		return fmt.Errorf("write state records: %w", err)
	}
	return sw.Close()
}

// ReadState rebuilds an FSM state from a stream written by WriteState. The
// checksum is verified before the state is returned, so a corrupt or
// truncated stream never yields a state.
func ReadState(r io.Reader) (*fsm.State, Header, error) {
	sr, err := NewReader(r)
	if err != nil {
		return nil, Header{}, err
	}
	return ReadStateFrom(sr)
}

// ReadStateFrom is ReadState for a stream whose header has been read.
func ReadStateFrom(sr *Reader) (*fsm.State, Header, error) {
	stop := make(chan struct{})
	defer close(stop)
	b := fsm.NewBuilder()
	for c := range decodeAhead(sr, recordLayout(sr.Header().Version), stop) {
		<-c.done
		for _, d := range c.out {
			b.Put(d)
		}
		switch {
		case c.decodeErr != nil:
			return nil, Header{}, fmt.Errorf("%w: %v", ErrCorrupt, c.decodeErr)
		case c.readErr == nil:
		case errors.Is(c.readErr, io.EOF):
			return b.State(), sr.Header(), nil
		default:
			return nil, Header{}, c.readErr
		}
	}
	return nil, Header{}, errors.New("snapshot: record stream ended without its trailer")
}

// recordLayout is the fsm record layout of a stream version: version 1
// streams carry layout 1 records, version 2 streams layout 2.
func recordLayout(version uint16) uint16 {
	if version == 1 {
		return fsm.OldestRecordLayout
	}
	return fsm.RecordLayout
}

// chunk is a run of records decoded together. Records are read in order,
// decoded by as many goroutines as there are processors (JSON decoding is
// most of the time a large snapshot takes to load), and put into the
// builder in their order, so the state is the same as a sequential read.
type chunk struct {
	layout    uint16
	kinds     []byte
	payloads  [][]byte
	out       []fsm.Decoded
	readErr   error // the read error that ends the stream (io.EOF at its end)
	decodeErr error
	done      chan struct{}
}

const chunkRecords = 256

// decodeAhead reads chunks of records and hands them to decoders; it
// returns the chunks in stream order. Closing stop ends it early.
func decodeAhead(sr *Reader, layout uint16, stop <-chan struct{}) <-chan *chunk {
	workers := runtime.GOMAXPROCS(0)
	ordered := make(chan *chunk, 2*workers)
	work := make(chan *chunk, 2*workers)
	for range workers {
		go func() {
			for c := range work {
				c.decode()
			}
		}()
	}
	go func() {
		defer close(ordered)
		defer close(work)
		for {
			c := &chunk{layout: layout, done: make(chan struct{})}
			for len(c.kinds) < chunkRecords {
				kind, payload, err := sr.Next()
				if err != nil {
					c.readErr = err
					break
				}
				c.kinds = append(c.kinds, kind)
				c.payloads = append(c.payloads, bytes.Clone(payload)) // the reader reuses its buffer
			}
			last := c.readErr != nil
			select {
			case ordered <- c:
			case <-stop:
				return
			}
			select {
			case work <- c:
			case <-stop:
				return
			}
			if last {
				return
			}
		}
	}()
	return ordered
}

func (c *chunk) decode() {
	defer close(c.done)
	c.out = make([]fsm.Decoded, 0, len(c.kinds))
	for i, kind := range c.kinds {
		d, err := fsm.DecodeRecordLayout(c.layout, kind, c.payloads[i])
		if err != nil {
			c.decodeErr = err
			return
		}
		c.out = append(c.out, d)
	}
	c.payloads = nil
}
