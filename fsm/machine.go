package fsm

import (
	"fmt"
	"sync/atomic"
)

// Result is what applying one command produced: either Err, or the
// entities the command created or changed (as they are after it).
type Result struct {
	Err     *Error
	Catalog *Catalog
	Schema  *Schema
	Table   *Table
	Staging *StagingTable
	// Namespace is a namespace below a schema (nested namespaces).
	Namespace *Namespace
	// Tables are the tables a multi-table command changed, in the
	// command's order (CommitIcebergTables).
	Tables []*Table
	// Properties says what a namespace property update did
	// (UpdateNamespaceProperties).
	Properties *PropertyChanges
	// Share is a Delta Sharing share (share.go).
	Share *Share
	// Recipient is a Delta Sharing recipient (recipient.go).
	Recipient *Recipient
	// SigningKey is the URL signing key (sharing_key.go).
	SigningKey *URLSigningKey
	// Lance is what a Lance version command did (lance.go).
	Lance *LanceResult
	// Principal and AuthToken are a principal and an API token
	// (principal.go); Grants the assignments on a securable after an
	// update (grant.go); AuthKeys the token signing keys (auth_key.go).
	Principal *Principal
	AuthToken *AuthToken
	Grants    *Grants
	AuthKeys  *AuthSigningKeys
	// GossipKeys is the gossip keyring after a change (gossip_key.go).
	GossipKeys *GossipKeyring
	// Steps are the results of a Transaction's commands, in order. When
	// the transaction failed, the last step is the command that failed.
	Steps []Result
	// NoOp is set when the command was recognised as an already-applied
	// replay and changed nothing.
	NoOp bool
}

func failed(err *Error) Result { return Result{Err: err} }

// Machine holds the current State and applies commands to it. Apply must
// be called from one goroutine (the raft apply loop); State may be called
// from any goroutine at any time.
type Machine struct {
	cur   atomic.Pointer[State]
	skips map[uint64]string // see SetSkips
}

// NewMachine returns a machine holding an empty state.
func NewMachine() *Machine {
	m := &Machine{}
	m.cur.Store(NewState())
	return m
}

// State returns the current immutable state.
func (m *Machine) State() *State { return m.cur.Load() }

// Replace swaps in a whole new state (snapshot restore).
func (m *Machine) Replace(s *State) { m.cur.Store(s) }

// Apply applies one encoded command at a raft index. A command that cannot
// be decoded is returned as an error: the caller must treat it as fatal,
// since skipping it would let this replica diverge from the others.
func (m *Machine) Apply(index uint64, data []byte) (Result, error) {
	if res, ok := m.skipped(index, data); ok {
		return res, nil
	}
	cmd, err := Decode(data)
	if err != nil {
		if u, ok := err.(ErrUnknownCommand); ok && u.Type&IgnoreUnknownFlag != 0 {
			return Result{NoOp: true}, nil
		}
		return Result{}, fmt.Errorf("apply index %d: %w", index, err)
	}
	if err := checkRules(cmd); err != nil {
		return Result{}, fmt.Errorf("apply index %d: %w", index, err)
	}
	return m.ApplyCommand(index, cmd), nil
}

// ApplyCommand applies a decoded command at a raft index.
func (m *Machine) ApplyCommand(index uint64, cmd Command) Result {
	t := m.cur.Load().begin()
	res := dispatch(t, index, cmd)
	if res.Err == nil && !res.NoOp {
		m.cur.Store(t.commit())
	}
	return res
}
