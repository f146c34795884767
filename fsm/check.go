package fsm

// Try applies cmd to s at index without changing s, and returns the result
// and the state it would produce (s itself when it changes nothing).
// Appliers work on a copy-on-write transaction, so s and every value
// reachable from it stay untouched. The leader uses it to answer, without
// a log entry, a command that would change nothing.
func (s *State) Try(index uint64, cmd Command) (Result, *State) {
	t := s.begin()
	res := dispatch(t, index, cmd)
	if res.Err != nil || res.NoOp {
		return res, s
	}
	return res, t.commit()
}
