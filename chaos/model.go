package chaos

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// tableState is the model of one table: its ratified versions (file name
// per version, index 0 is version 1) and its etag ("" until first seen).
type tableState struct {
	files []string
	etag  string
}

func (s tableState) latest() int64 { return int64(len(s.files)) }

// head is the latest version's file ("" before the first commit).
func (s tableState) head() string {
	if len(s.files) == 0 {
		return ""
	}
	return s.files[len(s.files)-1]
}

func (s tableState) withCommit(file string) tableState {
	return tableState{files: append(slices.Clip(s.files), file), etag: s.etag}
}

// step is the sequential specification of a table as the Delta API
// defines it. It reports whether op could have produced its output from
// state s, and the state after it.
func step(s tableState, op Op) (bool, tableState) {
	switch op.Op {
	case OpLoad:
		if op.Outcome != OutcomeOK {
			return true, s
		}
		if op.LatestVersion != s.latest() || (s.etag != "" && op.ETag != "" && op.ETag != s.etag) {
			return false, s
		}
		if op.Head != "" && s.head() != op.Head {
			return false, s
		}
		if s.etag == "" {
			s.etag = op.ETag
		}
		return true, s
	case OpCommit:
		switch op.Protocol {
		case ProtocolIceberg:
			return stepIcebergCommit(s, op)
		case ProtocolTransactions:
			return stepTransaction(s, op)
		}
		return stepCommit(s, op)
	case OpUpdate:
		matches := s.etag == "" || op.ETag == s.etag
		switch op.Outcome {
		case OutcomeOK:
			return matches, tableState{files: s.files, etag: op.NewETag}
		case OutcomeFail: // a 409 needs another etag; an unknown one ("" after an unknown update) may be
			return op.Status != 409 || s.etag == "" || op.ETag != s.etag, s
		}
		if matches { // unknown: if it applied, the new etag is not known
			return true, tableState{files: s.files}
		}
		return true, s
	}
	return false, s
}

func stepCommit(s tableState, op Op) (bool, tableState) {
	v, next := op.Version, s.latest()+1
	taken := v >= 1 && v <= s.latest()
	switch op.Outcome {
	case OutcomeOK: // a new commit, or a replay of the same file
		if v == next {
			return true, s.withCommit(op.FileName)
		}
		return taken && s.files[v-1] == op.FileName, s
	case OutcomeFail:
		switch op.Status {
		case 409: // version taken by another file
			return taken && s.files[v-1] != op.FileName, s
		case 400: // not the next version
			return v > next || v < 1, s
		}
		return v != next || refusedUnseen(op.Status), s // other refusals must not hide a commit
	}
	if v == next { // unknown outcome: linearized as applied; at the end it is as if it never was
		return true, s.withCommit(op.FileName)
	}
	return true, s
}

// refusedUnseen reports whether a refusal came before the table was
// looked at: the caller was not authenticated (401) or not allowed (403),
// or sent too much (429). Such a refusal says nothing of the versions.
func refusedUnseen(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests
}

// stepIcebergCommit is the Iceberg commit: add the snapshot as the next
// sequence number if the asserted base is the current snapshot. There is
// no replay: once a commit applied, its base is no longer current, so an
// identical retry is refused with 409 like any commit on a stale base.
func stepIcebergCommit(s tableState, op Op) (bool, tableState) {
	applies := op.Version == s.latest()+1 && op.Base == s.head()
	switch op.Outcome {
	case OutcomeOK:
		return applies, s.withCommit(op.FileName)
	case OutcomeFail: // 409: the base is stale; other refusals must not hide a commit
		return !applies || refusedUnseen(op.Status), s
	}
	if applies { // unknown outcome: linearized as applied; at the end it is as if it never was
		return true, s.withCommit(op.FileName)
	}
	return true, s
}

// tableModel is the porcupine model, partitioned by table.
var tableModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range h {
			t := op.Input.(Op).Table
			if _, ok := by[t]; !ok {
				order = append(order, t)
			}
			by[t] = append(by[t], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, t := range order {
			out = append(out, by[t])
		}
		return out
	},
	Init: func() any { return tableState{} },
	Step: func(state, input, _ any) (bool, any) {
		return step(state.(tableState), input.(Op))
	},
	Equal: func(a, b any) bool {
		x, y := a.(tableState), b.(tableState)
		return x.etag == y.etag && slices.Equal(x.files, y.files)
	},
	DescribeOperation: func(input, _ any) string {
		op := input.(Op)
		if op.Protocol == ProtocolTransactions {
			return describeTransaction(op)
		}
		switch op.Op {
		case OpCommit:
			if op.Protocol == ProtocolIceberg {
				return fmt.Sprintf("commit v%d %s on %q -> %s %d", op.Version, op.FileName, op.Base, op.Outcome, op.Status)
			}
			return fmt.Sprintf("commit v%d %s -> %s %d", op.Version, op.FileName, op.Outcome, op.Status)
		case OpLoad:
			return fmt.Sprintf("load -> v%d %s %s", op.LatestVersion, op.Head, op.Outcome)
		}
		return fmt.Sprintf("update if %s -> %s %s", op.ETag, op.NewETag, op.Outcome)
	},
	DescribeState: func(state any) string {
		s := state.(tableState)
		return fmt.Sprintf("v%d etag %s [%s]", s.latest(), s.etag, strings.Join(s.files, " "))
	},
}

// operations converts a history into porcupine operations. Final loads
// are checked separately and loads that failed are left out (each would
// stay pending, multiplying the search for nothing); unknown outcomes
// return at infinity, unless a settling retry bounds them (see settledBy);
// an unknown commit's identical retries of unknown outcome are stood for
// by the first (see repeats).
func operations(ops []Op) []porcupine.Operation {
	settled := settledBy(ops)
	repeated := repeats(ops, settled)
	out := make([]porcupine.Operation, 0, len(ops))
	for i, op := range ops {
		if op.Final || (op.Op == OpLoad && op.Outcome != OutcomeOK) || repeated[i] {
			continue // a load that observed nothing constrains nothing
		}
		ret := op.CompleteNs
		if op.Outcome == OutcomeUnknown {
			ret = settled[i]
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op, Call: op.InvokeNs, Output: op.Outcome, Return: ret})
	}
	return out
}

// repeats marks each commit of unknown outcome that repeats an earlier
// one of unknown outcome byte for byte (same client, table, version, file
// and base) and is settled at the same time. Of such identical commits at
// most one can apply (a Delta replay changes nothing; an Iceberg commit or
// a transaction asserts a base the first to apply moves on), at any time
// from the first one's invocation to the settling answer: the first one
// alone stands for exactly that. The repeats add no behaviour, only
// orderings among themselves, which make porcupine's search grow
// exponentially with the retries of a long outage (every node's power
// cut, say).
func repeats(ops []Op, settled []int64) map[int]bool {
	type key struct {
		client             int
		table, file, base  string
		version, settledAt int64
	}
	seen, out := map[key]bool{}, map[int]bool{}
	for i, op := range ops {
		if op.Op != OpCommit || op.Final || op.Outcome != OutcomeUnknown {
			continue
		}
		k := key{op.Client, op.Table, op.FileName, op.Base, op.Version, settled[i]}
		out[i], seen[k] = seen[k], true
	}
	return out
}

// settledBy gives each operation of unknown outcome the time after which
// it can have no effect: a commit whose client later sent the identical
// commit (same table, version, file and base) and got it acknowledged, or
// refused because the version is taken (or, for Iceberg, the base is no
// longer current), cannot apply after that answer (a late arrival finds
// the version taken and changes nothing); a transaction's refusal settles
// only when it names its Delta or Iceberg operation (see
// refusalExcludesApply). An unknown Iceberg commit or transaction is
// also bounded by any load that saw its version or a later one (see
// boundByLoads). Without such an answer the bound is infinity. Bounding
// these windows keeps the search small when a history has many unknown
// outcomes.
func settledBy(ops []Op) []int64 {
	type commitKey struct {
		client            int
		table, file, base string
		version           int64
	}
	out := make([]int64, len(ops))
	pending := map[commitKey][]int{}
	for i, op := range ops {
		out[i] = math.MaxInt64
		if op.Op != OpCommit || op.Final {
			continue
		}
		k := commitKey{op.Client, op.Table, op.FileName, op.Base, op.Version}
		if op.Outcome == OutcomeUnknown {
			pending[k] = append(pending[k], i)
			continue
		}
		if op.Outcome == OutcomeOK || (op.Status == 409 && (op.Protocol != ProtocolTransactions || refusalExcludesApply(op))) {
			for _, j := range pending[k] {
				if ops[j].InvokeNs < op.InvokeNs {
					out[j] = op.CompleteNs
				}
			}
			delete(pending, k)
		}
	}
	boundByLoads(ops, out)
	return out
}

// boundByLoads bounds unknown Iceberg commits and transactions by loads:
// a commit of version v applies only while the table (the group) is at
// version v-1 with its base current, and versions only grow, so once a
// load (of any table of the group) has seen version v or a later one the
// commit has applied before it or never will. After an unknown outcome
// these clients load to find out, so every such commit whose table moved
// on is bounded.
func boundByLoads(ops []Op, out []int64) {
	type seen struct{ version, at int64 }
	loads := map[string][]seen{}
	for _, op := range ops {
		if op.Op == OpLoad && op.Outcome == OutcomeOK && !op.Final {
			loads[op.Table] = append(loads[op.Table], seen{op.LatestVersion, op.CompleteNs})
		}
	}
	for i, op := range ops {
		if op.Protocol == ProtocolDelta || op.Op != OpCommit || op.Outcome != OutcomeUnknown {
			continue
		}
		for _, l := range loads[op.Table] {
			if l.version >= op.Version && l.at > op.InvokeNs && l.at < out[i] {
				out[i] = l.at
			}
		}
	}
}
