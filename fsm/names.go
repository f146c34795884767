package fsm

import "fmt"

// String names a command type, for logs and operators: the name of the
// command's Go type, as registered.
func (t CommandType) String() string {
	if spec := commandSpecs[t]; spec != nil {
		return spec.name
	}
	return fmt.Sprintf("unknown(%d)", uint8(t))
}
