package fsm

import (
	"crypto/sha256"
	"encoding/hex"
)

// SetSkips installs operators' decisions to apply some entries as no-ops:
// index -> hex sha256 of the entry's data. An entry is skipped only if its
// bytes hash as recorded, so a decision cannot hit another entry. Every
// replica must be given the same decisions; call before applying.
func (m *Machine) SetSkips(skips map[uint64]string) { m.skips = skips }

// skipped answers an entry an operator decided to skip.
func (m *Machine) skipped(index uint64, data []byte) (Result, bool) {
	want, ok := m.skips[index]
	if !ok {
		return Result{}, false
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != want {
		return Result{}, false
	}
	return failed(Errf(CodeInvalid, "log entry %d was skipped by an operator's decision", index)), true
}
