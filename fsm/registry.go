package fsm

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// The package grows by files: each object kind's file declares its
// commands and record kinds and registers them from an init function. The
// registries are arrays indexed by type byte and record kind, so nothing
// that reaches an output depends on registration or map order.

// commandSpec is what the machine knows about one command type.
type commandSpec struct {
	name   string // the command's Go type name, what CommandType.String says
	newCmd func() Command
	apply  func(t *tx, index uint64, cmd Command) Result
}

var commandSpecs [256]*commandSpec

// registerCommand makes command type ct decodable and appliable: Decode
// fills a new *C, and the machine applies it with apply. It panics on a
// type registered twice or a command whose Type is not ct, so mistakes
// stop the program at start-up.
func registerCommand[C any, P interface {
	*C
	Command
}](ct CommandType, apply func(t *tx, index uint64, cmd P) Result) {
	if commandSpecs[ct] != nil {
		panic(fmt.Sprintf("fsm: command type %d registered twice", ct))
	}
	if got := P(new(C)).Type(); got != ct {
		panic(fmt.Sprintf("fsm: %T has type %d, registered as %d", P(nil), got, ct))
	}
	commandSpecs[ct] = &commandSpec{
		name:   reflect.TypeFor[C]().Name(),
		newCmd: func() Command { return P(new(C)) },
		apply:  func(t *tx, index uint64, cmd Command) Result { return apply(t, index, cmd.(P)) },
	}
}

// dispatch applies cmd through its registered applier.
func dispatch(t *tx, index uint64, cmd Command) Result {
	spec := commandSpecs[cmd.Type()]
	if spec == nil {
		panic(fmt.Sprintf("fsm: no applier for %T", cmd))
	}
	return spec.apply(t, index, cmd)
}

// recordSpec is how one record kind of the serialised state is written,
// decoded and rebuilt.
type recordSpec struct {
	// write emits every entity of the kind in key order.
	write func(s *State, emit func(v any) error) error
	// decode parses a payload written in the given layout.
	decode func(layout uint16, payload []byte) (any, error)
	// put adds a decoded entity to the state being rebuilt.
	put func(b *Builder, v any)
}

var recordSpecs [256]*recordSpec

// registerRecord registers a record kind. Kinds are written in ascending
// kind order, so a kind may rely, when rebuilding, on every entity of a
// lower kind being in place already.
func registerRecord(kind byte, spec recordSpec) {
	if kind == 0 || recordSpecs[kind] != nil {
		panic(fmt.Sprintf("fsm: record kind %d reserved or registered twice", kind))
	}
	recordSpecs[kind] = &spec
}

// treeRecord is the record spec of a kind stored as values of type *T in
// one tree of the state. decode parses a payload of the given layout
// (nil: plain JSON of T in every layout); put stores a decoded value.
func treeRecord[T any](tree treeID, decode func(layout uint16, payload []byte) (*T, error), put func(b *Builder, v *T)) recordSpec {
	if decode == nil {
		decode = decodeJSON[T]
	}
	return recordSpec{
		write: func(s *State, emit func(any) error) error {
			var err error
			s.trees[tree].Root().Walk(func(_ []byte, v any) bool {
				err = emit(v)
				return err != nil
			})
			return err
		},
		decode: func(layout uint16, payload []byte) (any, error) { return decode(layout, payload) },
		put:    func(b *Builder, v any) { put(b, v.(*T)) },
	}
}

// decodeJSON decodes a payload whose layout is T's JSON in every version.
func decodeJSON[T any](_ uint16, payload []byte) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(payload, v); err != nil {
		return nil, err
	}
	return v, nil
}
