package chaos

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result is the verdict on a history.
type Result struct {
	Operations          int      `json:"operations"`
	AcknowledgedCommits int      `json:"acknowledged_commits"`
	LostCommits         int      `json:"lost_commits"`
	Linearizable        bool     `json:"linearizable"`
	LinearizabilityOK   string   `json:"linearizability_check"` // ok, illegal or unknown (timed out)
	Violations          []string `json:"violations"`
	// Transactions sums up the transactions across formats, if any.
	Transactions *TxSummary `json:"transactions,omitempty"`
	// Precheck is the pre-check's verdict, with the operations each
	// violation it proved names (see precheck.go).
	Precheck *Precheck `json:"precheck,omitempty"`
	// DecidedBy says what decided linearizability: precheck (a violation
	// proven, porcupine's search skipped) or porcupine ("" when undecided).
	DecidedBy   string `json:"decided_by,omitempty"`
	PorcupineMs int64  `json:"porcupine_ms,omitempty"` // how long porcupine's search took

	info porcupine.LinearizationInfo // for the report's visualization
}

// OK reports whether the history shows no violation at all.
func (r Result) OK() bool { return r.Linearizable && len(r.Violations) == 0 }

// Check checks a history. The pre-check first proves the violations a
// table's version history shows by itself (stale reads, lost
// acknowledged commits, versions bound to two files, reads of versions
// whose commit had not begun), naming the operations; any such violation
// decides the history is not linearizable, without porcupine's search,
// whose time grows exponentially with the operations of unknown outcome
// it must place. Otherwise porcupine decides linearizability of every
// table's operations. A group written with transactions across formats
// is one "table" for linearizability and is checked against the final
// loads of its three tables by checkTransactions.
func Check(ops []Op, timeout time.Duration) Result {
	res := Result{Operations: len(ops), Violations: []string{}, AcknowledgedCommits: acknowledged(ops)}
	pre := precheck(ops)
	res.Precheck = &pre
	for _, v := range pre.Violations {
		res.Violations = append(res.Violations, v.Message)
		if v.Kind == KindLostCommit {
			res.LostCommits++
		}
	}
	res.Violations = append(res.Violations, missingFinals(ops)...)
	if len(transactionGroups(ops)) > 0 {
		var lost int
		lost, res.Violations, res.Transactions = checkTransactions(ops, res.Violations)
		res.LostCommits += lost
	}
	if len(pre.Violations) > 0 {
		res.LinearizabilityOK, res.DecidedBy = "illegal", "precheck"
		return res
	}
	return linearize(res, ops, timeout)
}

// linearize has porcupine search a linearization of every table's
// operations.
func linearize(res Result, ops []Op, timeout time.Duration) Result {
	start := time.Now()
	verdict, info := porcupine.CheckOperationsVerbose(tableModel, operations(ops), timeout)
	res.info, res.PorcupineMs = info, time.Since(start).Milliseconds()
	switch verdict {
	case porcupine.Ok:
		res.Linearizable, res.LinearizabilityOK, res.DecidedBy = true, "ok", "porcupine"
	case porcupine.Illegal:
		res.LinearizabilityOK, res.DecidedBy = "illegal", "porcupine"
		res.Violations = append(res.Violations, "the history is not linearizable (see the report's visualization)")
	default:
		res.LinearizabilityOK = "unknown"
		res.Violations = append(res.Violations, fmt.Sprintf("linearizability could not be decided within %v", timeout))
	}
	return res
}

// acknowledged counts the acknowledged versions of every table.
func acknowledged(ops []Op) int {
	type key struct {
		table   string
		version int64
	}
	seen := map[key]bool{}
	for _, op := range ops {
		if op.Op == OpCommit && op.Outcome == OutcomeOK {
			seen[key{op.Table, op.Version}] = true
		}
	}
	return len(seen)
}

// missingFinals names the tables with acknowledged commits but no final
// load (a group's are checkTransactions').
func missingFinals(ops []Op) []string {
	acked, final := map[string]bool{}, map[string]bool{}
	for _, op := range ops {
		switch {
		case op.Protocol == ProtocolTransactions:
		case op.Op == OpCommit && op.Outcome == OutcomeOK:
			acked[op.Table] = true
		case op.Final && op.Op == OpLoad && op.Outcome == OutcomeOK:
			final[op.Table] = true
		}
	}
	var out []string
	for t := range acked {
		if !final[t] {
			out = append(out, fmt.Sprintf("table %s: no final load after healing", t))
		}
	}
	sort.Strings(out)
	return out
}
