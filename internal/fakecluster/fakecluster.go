// Package fakecluster is an in-memory stand-in for the replication layer's
// data path (httpapi.DataPath): one node that always leads and applies
// each proposed command at once to an fsm.Machine, encoded and decoded as
// a log entry would be. Handler tests run against it without raft, gossip
// or disk; everything about replication itself (forwarding, leadership
// changes, outcomes unknown) is tested against real clusters instead.
package fakecluster

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/fsm"
)

// Node is a one-node cluster that always leads.
type Node struct {
	id       string
	httpAddr string

	mu    sync.Mutex // serialises applies, as raft's apply loop does
	m     *fsm.Machine
	index uint64 // index of the last applied command
}

// New returns a node seeded as a new cluster's first leader seeds it:
// catalog "unity" and schema "default" under storageRoot.
func New(id, storageRoot string) *Node {
	n := &Node{id: id, m: fsm.NewMachine()}
	init := &fsm.Init{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()}, MetastoreID: uuid.NewString(),
		StorageRoot: storageRoot, CatalogID: uuid.NewString(), SchemaID: uuid.NewString()}
	if _, _, err := n.Propose(context.Background(), init); err != nil {
		panic("fakecluster: seeding the state: " + err.Error())
	}
	return n
}

// SetHTTPAddr sets the address LeaderHTTPAddr reports.
func (n *Node) SetHTTPAddr(addr string) { n.httpAddr = addr }

// ID is the node's id.
func (n *Node) ID() string { return n.id }

// Propose applies cmd at the next index and returns its result. The
// command goes through fsm.EncodeChecked and the machine's Apply, as a log entry
// does, so a command that does not survive encoding fails here too.
func (n *Node) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, uint64, error) {
	if err := ctx.Err(); err != nil {
		return fsm.Result{}, 0, err
	}
	if r, ok := cmd.(interface{ SetRules(uint16) }); ok {
		r.SetRules(fsm.CurrentRules) // every replica of the fake is this build
	}
	data, err := fsm.EncodeChecked(cmd)
	if err != nil {
		return fsm.Result{}, 0, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	res, err := n.m.Apply(n.index+1, data)
	if err != nil {
		return fsm.Result{}, 0, err
	}
	n.index++
	return res, n.index, nil
}

// LinearizableState returns the state with every applied command.
func (n *Node) LinearizableState(ctx context.Context) (*fsm.State, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	st, idx := n.StaleState()
	return st, idx, nil
}

// ReadIndex is the applied index: one node is its own leader.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	_, idx := n.StaleState()
	return idx, ctx.Err()
}

// WaitApplied returns at once: every acknowledged command is applied.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error { return ctx.Err() }

// StaleState returns the applied state and its index (on one node, the
// same as the linearizable one).
func (n *Node) StaleState() (*fsm.State, uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m.State(), n.index
}

// IsLeader is always true.
func (n *Node) IsLeader() bool { return true }

// LeaderHTTPAddr is the node's own address.
func (n *Node) LeaderHTTPAddr() (string, error) { return n.httpAddr, nil }

// Ready is always true: the state is seeded from the start.
func (n *Node) Ready() bool { return true }

// NoteEntry does nothing: the fake always leads.
func (n *Node) NoteEntry(string) {}
