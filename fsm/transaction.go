package fsm

import (
	"encoding/json"
	"fmt"
)

// CmdTransaction applies several commands as one.
const CmdTransaction CommandType = 38

func init() { registerCommand(CmdTransaction, applyTransaction) }

// Transaction is several commands that land together or not at all: one
// log entry whose commands are applied in order to one working copy of
// the state, so a later command sees what the earlier ones did. The
// first command that fails discards them all. It carries Lance's
// batch-commit and batch-create, and the cross-format commit that changes
// Delta, Iceberg and Lance tables at once.
//
// Only commands registered with allowInTransaction may take part (table
// commits, not namespace or cluster changes), and a transaction does not
// nest. Each command carries its own stamp, but applies under the
// transaction's rules, which the leader stamped on the entry.
type Transaction struct {
	Stamp
	Ops []TransactionOp `json:"ops"`
}

// TransactionOp is one command of a transaction, encoded as in a log
// entry without the payload version: its type and its JSON.
type TransactionOp struct {
	Type    CommandType     `json:"type"`
	Command json.RawMessage `json:"command"`
}

func (*Transaction) Type() CommandType { return CmdTransaction }

var inTransaction [256]bool

// allowInTransaction lets command types take part in transactions.
func allowInTransaction(types ...CommandType) {
	for _, ct := range types {
		inTransaction[ct] = true
	}
}

// NewTransaction builds a transaction of cmds, each of a type allowed in
// one.
func NewTransaction(stamp Stamp, cmds ...Command) (*Transaction, error) {
	tr := &Transaction{Stamp: stamp}
	for _, c := range cmds {
		if !inTransaction[c.Type()] {
			return nil, fmt.Errorf("command %s cannot be part of a transaction", c.Type())
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encode %T: %w", c, err)
		}
		tr.Ops = append(tr.Ops, TransactionOp{Type: c.Type(), Command: b})
	}
	return tr, nil
}

// decode returns the command of an op, or why it cannot take part.
func (op *TransactionOp) decode(rules uint16) (Command, *Error) {
	if !inTransaction[op.Type] || commandSpecs[op.Type] == nil {
		return nil, Invalidf("Command type %d cannot be part of a transaction", op.Type)
	}
	cmd := commandSpecs[op.Type].newCmd()
	if err := json.Unmarshal(op.Command, cmd); err != nil {
		return nil, Invalidf("Invalid command of type %d in a transaction: %v", op.Type, err)
	}
	if r, ok := cmd.(interface{ SetRules(uint16) }); ok {
		r.SetRules(rules)
	}
	return cmd, nil
}

func applyTransaction(t *tx, index uint64, c *Transaction) Result {
	if len(c.Ops) == 0 {
		return failed(Invalidf("A transaction needs at least one command"))
	}
	steps := make([]Result, 0, len(c.Ops))
	changed := false
	for i := range c.Ops {
		cmd, err := c.Ops[i].decode(c.Rules)
		if err != nil {
			return Result{Err: err, Steps: append(steps, failed(err))}
		}
		res := dispatch(t, index, cmd)
		steps = append(steps, res)
		if res.Err != nil {
			return Result{Err: res.Err, Steps: steps}
		}
		changed = changed || !res.NoOp
	}
	return Result{Steps: steps, NoOp: !changed}
}
