package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
)

// A Plan is a write of several operations (a Lance batch commit, a
// transaction across formats) being planned on the leader. Each operation
// adds the commands it needs; every command is tried at once on a
// working copy of the state, so a later operation sees what the earlier
// ones did and a failure is known before anything is proposed. Commit
// then proposes all of them as one entry (fsm.Transaction), which the
// state machine decides again, all or nothing.
//
// Files an operation writes before proposing (manifests, metadata) are
// registered with OnAbort: they are removed when the entry fails, and
// kept when its outcome is unknown (it may yet apply). OnCommit runs
// best-effort clean-ups once the entry applied (staging files).
type Plan struct {
	echo.Context
	State *fsm.State // the working copy: the state with the planned commands applied
	Stamp fsm.Stamp  // what every command carries

	cmds     []fsm.Command
	opOf     []int    // the operation each command belongs to
	nameOf   []string // and that operation's kind
	op       int
	opName   string
	onAbort  []func()
	onCommit []func()
	results  []fsm.Result // of the committed entry, one per command
}

// NewPlan starts a plan on the state the request is answered from.
func (s *Server) NewPlan(c echo.Context) (*Plan, error) {
	st, err := s.State(c)
	if err != nil {
		return nil, err
	}
	return &Plan{Context: c, State: st, Stamp: stamp(c)}, nil
}

// Op starts planning operation i, named name (errors raised from here on
// are that operation's).
func (p *Plan) Op(i int, name string) { p.op, p.opName = i, name }

// Fail wraps an error of the current operation.
func (p *Plan) Fail(err error) error {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	return &OpError{Index: p.op, Op: p.opName, Err: err}
}

// Add tries cmd on the working copy and keeps it; a command the state
// refuses is the current operation's error.
func (p *Plan) Add(cmd fsm.Command) (fsm.Result, error) {
	res, next := p.State.Try(0, cmd)
	if res.Err != nil {
		return res, p.Fail(res.Err)
	}
	p.State = next
	p.cmds = append(p.cmds, cmd)
	p.opOf, p.nameOf = append(p.opOf, p.op), append(p.nameOf, p.opName)
	return res, nil
}

// OnAbort registers what undoes a file written for the plan.
func (p *Plan) OnAbort(f func()) { p.onAbort = append(p.onAbort, f) }

// OnCommit registers a clean-up to run once the plan's entry applied.
func (p *Plan) OnCommit(f func()) { p.onCommit = append(p.onCommit, f) }

// Abort gives up a plan that will not be proposed: the files written for
// it are removed.
func (p *Plan) Abort() {
	for _, f := range p.onAbort {
		f()
	}
	p.onAbort = nil
}

// Empty reports whether no operation added a command.
func (p *Plan) Empty() bool { return len(p.cmds) == 0 }

// Commit proposes the planned commands as one entry and returns each
// command's result, in order. A command the state machine refuses is
// returned as an OpError naming its operation.
func (s *Server) Commit(p *Plan) ([]fsm.Result, error) {
	if p.Empty() {
		return nil, nil
	}
	var cmd fsm.Command = p.cmds[0]
	if len(p.cmds) > 1 {
		tr, err := fsm.NewTransaction(p.Stamp, p.cmds...)
		if err != nil {
			return nil, err
		}
		cmd = tr
	}
	res, err := s.propose(p, cmd)
	if err != nil {
		return nil, p.failed(res, err)
	}
	for _, f := range p.onCommit {
		f()
	}
	p.results = res.Steps
	if len(p.cmds) == 1 {
		p.results = []fsm.Result{res}
	}
	return p.results, nil
}

// failed settles a plan whose entry did not apply: its files are removed
// unless the outcome is unknown.
func (p *Plan) failed(res fsm.Result, err error) error {
	if !UnknownOutcome(err) {
		p.Abort()
	}
	if res.Err == nil {
		return err
	}
	i := 0
	if n := len(res.Steps); n > 0 {
		i = n - 1
	}
	return &OpError{Index: p.opOf[i], Op: p.nameOf[i], Err: res.Err}
}

// UnknownOutcome reports whether a proposal's outcome is unknown: the
// entry may yet apply, so what was written for it must stay.
func UnknownOutcome(err error) bool {
	return errors.Is(err, clusterapi.ErrUnknownOutcome) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// OpError is the failure of one operation of a request that carries
// several: Index is its position, from 0, and Op its kind where known.
// Protocols render it from Problem.Op.
type OpError struct {
	Index int
	Op    string
	Err   error
}

func (e *OpError) Error() string {
	if e.Op == "" {
		return fmt.Sprintf("operation %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("operation %d (%s): %v", e.Index, e.Op, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// Detail names the failed operation for an error envelope.
func (e *OpError) Detail() string {
	if e.Op == "" {
		return "operation " + strconv.Itoa(e.Index) + " failed"
	}
	return "operation " + strconv.Itoa(e.Index) + " (" + e.Op + ") failed"
}

// RawOps splits a JSON list of operations, each an object of exactly one
// key naming its kind, into kinds and bodies.
func RawOps(ops []map[string]json.RawMessage, kinds []string) ([]string, []json.RawMessage, error) {
	names, bodies := make([]string, len(ops)), make([]json.RawMessage, len(ops))
	for i, op := range ops {
		if len(op) != 1 {
			return nil, nil, &OpError{Index: i, Err: Invalid("Operation %d must have exactly one of %v; it has %d keys", i, kinds, len(op))}
		}
		for k, v := range op {
			names[i], bodies[i] = k, v
		}
	}
	return names, bodies, nil
}

// ResultOf is the result of the last command operation op added, among
// the results Commit returned; nil when the operation added none.
func (p *Plan) ResultOf(results []fsm.Result, op int) *fsm.Result {
	var out *fsm.Result
	for i, o := range p.opOf {
		if o == op && i < len(results) {
			out = &results[i]
		}
	}
	return out
}

// Rendered renders each operation's answer from the results of the
// last Commit of this plan.
func (p *Plan) Rendered(renders []OpRender) []any {
	out := make([]any, len(renders))
	for i, r := range renders {
		out[i] = r(p.ResultOf(p.results, i))
	}
	return out
}

// OpRender is how a planned operation answers once its plan committed;
// res is the result of the operation's last command (nil if it added
// none, as a replay that needs no entry).
type OpRender func(res *fsm.Result) any

// TxPlanner plans one operation of a transaction across formats (package
// transactions): it adds the operation's commands to p and says how its
// answer renders. Each protocol that takes part registers one.
type TxPlanner func(p *Plan, body json.RawMessage) (OpRender, error)

// AddTxPlanner registers the planner of one kind of transaction operation.
func (s *Server) AddTxPlanner(kind string, f TxPlanner) {
	if s.txPlanners == nil {
		s.txPlanners = map[string]TxPlanner{}
	}
	s.txPlanners[kind] = f
}

// TxPlanner returns the planner of a kind of transaction operation.
func (s *Server) TxPlanner(kind string) (TxPlanner, bool) {
	f, ok := s.txPlanners[kind]
	return f, ok
}
