package fsm

import (
	"encoding/json"
	"fmt"
)

// CommandType is the first byte of every log entry. Values are append-only:
// a type once written to a log keeps its meaning forever. Each type is
// declared, with an explicit value, in the file of the object kind it
// changes, and registered there (registerCommand); registering a value
// twice stops the program at start-up.
type CommandType uint8

// IgnoreUnknownFlag marks a command type that older replicas may skip.
// A type without it that a replica does not know is corruption or version
// skew, and applying must stop rather than diverge.
const IgnoreUnknownFlag CommandType = 0x80

// payloadVersion is the version of the JSON payload that follows the type
// byte. Decoders accept every version they know.
const payloadVersion = 1

// Command is any state change. Every field a command carries is decided
// before proposing (by the leader): time in epoch milliseconds, new IDs.
type Command interface {
	Type() CommandType
}

// Encode serialises a command as [type][payload version][JSON payload].
// encoding/json sorts map keys, so the bytes are deterministic.
func Encode(c Command) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", c, err)
	}
	out := make([]byte, 0, len(body)+2)
	out = append(out, byte(c.Type()), payloadVersion)
	return append(out, body...), nil
}

// ErrUnknownCommand is returned by Decode for a type this build does not know.
type ErrUnknownCommand struct{ Type CommandType }

func (e ErrUnknownCommand) Error() string { return fmt.Sprintf("unknown command type %d", e.Type) }

// Decode parses a log entry produced by Encode.
func Decode(b []byte) (Command, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("command too short (%d bytes)", len(b))
	}
	t, ver := CommandType(b[0]), b[1]
	spec := commandSpecs[t]
	if spec == nil {
		return nil, ErrUnknownCommand{Type: t}
	}
	if ver != payloadVersion {
		return nil, fmt.Errorf("command type %d: unsupported payload version %d", t, ver)
	}
	c := spec.newCmd()
	if err := json.Unmarshal(b[2:], c); err != nil {
		return nil, fmt.Errorf("decode command type %d: %w", t, err)
	}
	return c, nil
}

// Stamp is what every command carries: the leader's clock and the caller.
type Stamp struct {
	Time   int64  `json:"time"`             // leader wall clock, epoch ms
	Caller string `json:"caller,omitempty"` // authenticated principal, if any
	// Rules is the validation level the command applies under (Rules*),
	// decided by the leader from what every replica knows.
	Rules uint16 `json:"rules,omitempty"`
}

// SetRules sets the validation level a command is proposed under.
func (s *Stamp) SetRules(r uint16) { s.Rules = r }
