package fsm

// EncodeChecked encodes a command for the log and decodes the bytes again
// with the decoder every replica's apply uses, so that a command the log
// decoder would refuse never enters the log: one such entry would stop
// every replica on the same index. A command that does not round-trip is
// refused as invalid (a 400 on every protocol), and nothing is proposed.
func EncodeChecked(c Command) ([]byte, error) {
	data, err := Encode(c)
	if err != nil {
		return nil, Errf(CodeInvalid, "The request cannot be stored as given: %v", err)
	}
	decoded, err := Decode(data)
	if err == nil {
		err = checkRules(decoded)
	}
	if err != nil {
		return nil, Errf(CodeInvalid, "The request cannot be stored as given: %v", err)
	}
	return data, nil
}
