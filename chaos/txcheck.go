package chaos

import (
	"fmt"
	"sort"
	"strings"
)

// TxSummary is what became of the transactions across formats of a run.
type TxSummary struct {
	Acknowledged int `json:"acknowledged"`
	Refused      int `json:"refused"`
	// Unknown transactions got no definite answer (a leader killed, paused
	// or cut off under them, a retry refused after an earlier attempt);
	// after healing each applied to every table of its group or to none.
	Unknown        int `json:"unknown"`
	UnknownApplied int `json:"unknown_applied"`
	UnknownAbsent  int `json:"unknown_absent"`
	// Partial transactions are in some tables of their group only: each is
	// a violation.
	Partial int `json:"partial"`
}

// transactionGroups is the set of groups written with transactions.
func transactionGroups(ops []Op) map[string]bool {
	out := map[string]bool{}
	for _, op := range ops {
		if op.Protocol == ProtocolTransactions {
			out[op.Table] = true
		}
	}
	return out
}

// txRecord is one transaction as its client saw it, over its attempts.
type txRecord struct {
	version int64
	outcome string // ok if an attempt was acknowledged, fail if its only answer was a refusal, else unknown
	status  int    // the refusal's
	part    string // and the operation it named
}

func (r *txRecord) describe() string {
	switch r.outcome {
	case OutcomeOK:
		return "acknowledged"
	case OutcomeFail:
		if r.part != "" {
			return fmt.Sprintf("refused with %d at its %s operation", r.status, r.part)
		}
		return fmt.Sprintf("refused with %d", r.status)
	}
	return "of unknown outcome"
}

// checkTransactions checks atomicity on the final loads of every group's
// three tables: each transaction, whatever its answer, must be in all of
// them at its version or in none; an acknowledged one in all; a refused
// one in none; the tables must end at the same version with no gap, and
// every Lance version's manifest must be in the store, as staged. A
// Delta table only shows the versions it still tracks (not yet
// published), so a transaction's absence from it is proven only for
// those and for versions past its latest. It returns how many
// acknowledged transactions were lost.
func checkTransactions(ops []Op, violations []string) (int, []string, *TxSummary) {
	sum := &TxSummary{}
	txs := map[string]map[string]*txRecord{} // group -> transaction id
	finals := map[string]map[string]Op{}     // group -> part
	var groups []string
	for _, op := range ops {
		if op.Protocol != ProtocolTransactions {
			continue
		}
		g := op.Table
		if txs[g] == nil {
			txs[g], finals[g] = map[string]*txRecord{}, map[string]Op{}
			groups = append(groups, g)
		}
		switch {
		case op.Final && op.Op == OpLoad && op.Outcome == OutcomeOK:
			finals[g][op.Part] = op
		case op.Op == OpCommit && !op.Final:
			r := txs[g][op.FileName]
			if r == nil {
				r = &txRecord{version: op.Version, outcome: op.Outcome}
				txs[g][op.FileName] = r
			} else {
				switch {
				case r.outcome == OutcomeOK:
				case op.Outcome == OutcomeOK:
					r.outcome = OutcomeOK
				default: // a retry, so an earlier attempt got no answer: a refusal now settles nothing
					r.outcome = OutcomeUnknown
				}
			}
			if op.Outcome == OutcomeFail {
				r.status, r.part = op.Status, op.Part
			}
		}
	}
	sort.Strings(groups)
	lost := 0
	for _, g := range groups {
		for _, r := range txs[g] {
			switch r.outcome {
			case OutcomeOK:
				sum.Acknowledged++
			case OutcomeFail:
				sum.Refused++
			default:
				sum.Unknown++
			}
		}
		var l int
		l, violations = checkGroup(g, txs[g], finals[g], sum, violations)
		lost += l
	}
	return lost, violations, sum
}

// checkGroup checks one group against the final loads of its tables.
func checkGroup(g string, txs map[string]*txRecord, fin map[string]Op, sum *TxSummary, violations []string) (int, []string) {
	for _, p := range txParts {
		if _, ok := fin[p]; !ok {
			violations = append(violations, fmt.Sprintf("group %s: no final load of its %s table after healing", g, p))
		}
	}
	if len(fin) < len(txParts) {
		return 0, violations
	}
	d, i, l := fin[PartDelta].LatestVersion, fin[PartIceberg].LatestVersion, fin[PartLance].LatestVersion
	if d != i || i != l {
		violations = append(violations, fmt.Sprintf("group %s: its tables end at different versions (delta %d, iceberg %d, lance %d)", g, d, i, l))
	}
	for _, p := range []string{PartIceberg, PartLance} { // they list every version
		var gaps []string
		for v := int64(1); v <= fin[p].LatestVersion; v++ {
			if _, ok := fin[p].Commits[v]; !ok {
				gaps = append(gaps, fmt.Sprint(v))
			}
		}
		if len(gaps) > 0 {
			violations = append(violations, fmt.Sprintf("group %s: its %s table lacks versions %s below its latest %d",
				g, p, strings.Join(gaps, ", "), fin[p].LatestVersion))
		}
	}
	bad := make([]int64, 0, len(fin[PartLance].BadManifests))
	for v := range fin[PartLance].BadManifests {
		bad = append(bad, v)
	}
	sort.Slice(bad, func(a, b int) bool { return bad[a] < bad[b] })
	for _, v := range bad {
		violations = append(violations, fmt.Sprintf("group %s: its lance table's version %d (transaction %s) has %s in the store",
			g, v, fin[PartLance].Commits[v], fin[PartLance].BadManifests[v]))
	}
	where := map[string]map[string]int64{} // transaction -> part -> version
	for _, p := range txParts {
		for v, tx := range fin[p].Commits {
			if where[tx] == nil {
				where[tx] = map[string]int64{}
			}
			where[tx][p] = v
		}
	}
	type entry struct {
		id string
		v  int64
	}
	var ids []entry
	for id, r := range txs {
		ids = append(ids, entry{id, r.version})
	}
	for id, at := range where {
		if _, ok := txs[id]; !ok {
			for _, v := range at {
				ids = append(ids, entry{id, v})
				break
			}
		}
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a].v < ids[b].v || (ids[a].v == ids[b].v && ids[a].id < ids[b].id) })
	lost := 0
	for _, e := range ids {
		r := txs[e.id]
		if r == nil {
			violations = append(violations, fmt.Sprintf("group %s: transaction %s, which no client sent, is in its %s table(s)",
				g, e.id, strings.Join(partsOf(where[e.id]), ", ")))
			continue
		}
		var in, out, moved []string
		for _, p := range txParts {
			f := fin[p]
			if v, ok := where[e.id][p]; ok {
				in = append(in, p)
				if v != r.version {
					moved = append(moved, fmt.Sprintf("%s version %d", p, v))
				}
				continue
			}
			if other, ok := f.Commits[r.version]; ok {
				out = append(out, fmt.Sprintf("%s (its version %d is transaction %s)", p, r.version, other))
			} else if r.version > f.LatestVersion {
				out = append(out, fmt.Sprintf("%s (at version %d)", p, f.LatestVersion))
			} else if p != PartDelta { // Iceberg and Lance list every version
				out = append(out, fmt.Sprintf("%s (it has no version %d)", p, r.version))
			} // else a Delta version no longer tracked: neither in nor out
		}
		if len(moved) > 0 {
			violations = append(violations, fmt.Sprintf("group %s: transaction %s (%s) of version %d is at %s",
				g, e.id, r.describe(), r.version, strings.Join(moved, ", ")))
		}
		switch {
		case len(in) > 0 && len(out) > 0:
			sum.Partial++
			if r.outcome == OutcomeOK {
				lost++
			}
			violations = append(violations, fmt.Sprintf("group %s: transaction %s (%s, version %d) is partially present: in %s; missing from %s",
				g, e.id, r.describe(), r.version, strings.Join(in, ", "), strings.Join(out, ", ")))
		case r.outcome == OutcomeOK && len(out) > 0:
			lost++
			violations = append(violations, fmt.Sprintf("group %s: acknowledged transaction %s (version %d) lost: missing from %s",
				g, e.id, r.version, strings.Join(out, ", ")))
		case r.outcome == OutcomeFail && len(in) > 0:
			violations = append(violations, fmt.Sprintf("group %s: transaction %s was %s but is in its %s table(s)",
				g, e.id, r.describe(), strings.Join(in, ", ")))
		case r.outcome == OutcomeUnknown && len(in) > 0:
			sum.UnknownApplied++
		case r.outcome == OutcomeUnknown:
			sum.UnknownAbsent++
		}
	}
	return lost, violations
}

// partsOf lists the parts of a transaction's whereabouts, in order.
func partsOf(at map[string]int64) []string {
	var out []string
	for _, p := range txParts {
		if v, ok := at[p]; ok {
			out = append(out, fmt.Sprintf("%s (version %d)", p, v))
		}
	}
	return out
}
