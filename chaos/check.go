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

	info porcupine.LinearizationInfo // for the report's visualization
}

// OK reports whether the history shows no violation at all.
func (r Result) OK() bool { return r.Linearizable && len(r.Violations) == 0 }

// Check checks a history: linearizability of every table's operations,
// then the invariants against the final loads. A group written with
// transactions across formats is one "table" for linearizability and is
// checked against the final loads of its three tables by
// checkTransactions.
func Check(ops []Op, timeout time.Duration) Result {
	res := Result{Operations: len(ops), Violations: []string{}}
	acked := map[string]map[int64]string{} // table -> version -> file
	for _, op := range ops {
		if op.Op != OpCommit || op.Outcome != OutcomeOK {
			continue
		}
		if acked[op.Table] == nil {
			acked[op.Table] = map[int64]string{}
		}
		if prev, ok := acked[op.Table][op.Version]; ok && prev != op.FileName {
			res.Violations = append(res.Violations, fmt.Sprintf("table %s: version %d acknowledged with two files, %s and %s",
				op.Table, op.Version, prev, op.FileName))
		} else if !ok {
			res.AcknowledgedCommits++
		}
		acked[op.Table][op.Version] = op.FileName
	}
	groups := transactionGroups(ops)
	for g := range groups {
		delete(acked, g) // checked by checkTransactions
	}
	res.LostCommits, res.Violations = checkFinal(ops, acked, res.Violations)
	if len(groups) > 0 {
		var lost int
		lost, res.Violations, res.Transactions = checkTransactions(ops, res.Violations)
		res.LostCommits += lost
	}

	verdict, info := porcupine.CheckOperationsVerbose(tableModel, operations(ops), timeout)
	res.info = info
	switch verdict {
	case porcupine.Ok:
		res.Linearizable, res.LinearizabilityOK = true, "ok"
	case porcupine.Illegal:
		res.LinearizabilityOK = "illegal"
		res.Violations = append(res.Violations, "the history is not linearizable (see the report's visualization)")
	default:
		res.LinearizabilityOK = "unknown"
		res.Violations = append(res.Violations, fmt.Sprintf("linearizability could not be decided within %v", timeout))
	}
	return res
}

// checkFinal compares every acknowledged commit with the final load of
// its table: the version must be covered by the final latest version and,
// while still tracked, bound to the acknowledged file.
func checkFinal(ops []Op, acked map[string]map[int64]string, violations []string) (int, []string) {
	final := map[string]Op{}
	for _, op := range ops {
		if op.Final && op.Op == OpLoad && op.Outcome == OutcomeOK && op.Protocol != ProtocolTransactions {
			final[op.Table] = op
		}
	}
	tables := make([]string, 0, len(acked))
	for t := range acked {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	lost := 0
	for _, t := range tables {
		f, ok := final[t]
		if !ok {
			violations = append(violations, fmt.Sprintf("table %s: no final load after healing", t))
			continue
		}
		versions := make([]int64, 0, len(acked[t]))
		for v := range acked[t] {
			versions = append(versions, v)
		}
		sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
		for _, v := range versions {
			file := acked[t][v]
			got, tracked := f.Commits[v]
			switch {
			case v > f.LatestVersion:
				lost++
				violations = append(violations, fmt.Sprintf("table %s: acknowledged version %d lost (final latest version %d)", t, v, f.LatestVersion))
			case tracked && got != file:
				lost++
				violations = append(violations, fmt.Sprintf("table %s: acknowledged version %d (%s) replaced by %s", t, v, file, got))
			}
		}
	}
	return lost, violations
}
