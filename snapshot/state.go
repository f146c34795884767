package snapshot

import (
	"errors"
	"fmt"
	"io"

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
	b := fsm.NewBuilder()
	for {
		kind, payload, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return b.State(), sr.Header(), nil
		}
		if err != nil {
			return nil, Header{}, err
		}
		if err := b.Add(kind, payload); err != nil {
			return nil, Header{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
}
