package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The pre-check proves, in a few sorted passes over each table's
// operations, the violations a version history shows by itself, before
// porcupine searches for a linearization (which takes time exponential in
// the operations of unknown outcome it must place). A table's state is a
// sequence of versions, each bound to one file (a Delta commit file, an
// Iceberg snapshot id, a transaction id) by the commit that made it and
// never changed after, and versions only grow. So, in every linearizable
// history (its final loads included):
//
//   - an acknowledged version is in the final load, bound to its file
//     (lost-commit; porcupine does not see the final loads);
//   - no version is bound to two files by acknowledged commits, loads that
//     saw it as the latest (Iceberg, transactions) or the final load
//     (two-files);
//   - a load that began after a commit of version v was acknowledged sees
//     version v or a later one (stale-read);
//   - a load that saw version v (with file f) did not return before the
//     first commit that could have made it (v, or f at v; and each
//     version below v) began (future-read).
//
// Each follows from the model (model.go), so what the pre-check proves
// outside the final loads porcupine finds too: a commit of unknown
// outcome may or may not have applied, at any time after it began, so it
// never proves a version present, but it may have made what a load saw;
// refused commits made nothing; loads that got no answer saw nothing;
// operations on etags are left to porcupine. Transactions groups are
// checked like tables, except for their final loads (checkTransactions).
// Intervals are closed, as porcupine's: operations that touch are
// concurrent.

// Kinds of violation the pre-check proves.
const (
	KindStaleRead  = "stale-read"
	KindLostCommit = "lost-commit"
	KindTwoFiles   = "two-files"
	KindFutureRead = "future-read"
)

// Violation is a violation the pre-check proved, with the operations
// that show it: the one at fault first where one can be told (a stale or
// future read, the binding that contradicts an earlier one).
type Violation struct {
	Kind    string  `json:"kind"`
	Table   string  `json:"table"`
	Version int64   `json:"version"`
	Message string  `json:"message"`
	Ops     []OpRef `json:"ops"`
}

// OpRef names an operation of a history.
type OpRef struct {
	Index      int    `json:"index"` // position in the history, from 0
	Role       string `json:"role"`  // what it shows: "stale read", "acknowledged commit", ...
	Client     int    `json:"client"`
	Op         string `json:"op"`
	Outcome    string `json:"outcome"`
	Version    int64  `json:"version"`             // a commit's version, a load's latest version
	FileName   string `json:"file_name,omitempty"` // a commit's file, a load's head
	InvokeNs   int64  `json:"invoke_ns"`
	CompleteNs int64  `json:"complete_ns"`
	Final      bool   `json:"final,omitempty"`
}

// Precheck is the pre-check's verdict on a history.
type Precheck struct {
	Verdict    string      `json:"verdict"` // ok (nothing found) or violations
	Tables     int         `json:"tables"`
	DurationUs int64       `json:"duration_us"`
	Violations []Violation `json:"violations"`
}

// tableOps indexes the operations of one table the pre-check reads.
type tableOps struct {
	name    string
	acked   []int // acknowledged commits
	writers []int // commits that may have applied: acknowledged or of unknown outcome
	reads   []int // loads that answered
	final   int   // the last final load that answered (-1: none, or a group's)
	group   bool  // a transactions group
}

// precheck runs the pre-check on every table.
func precheck(ops []Op) Precheck {
	start := time.Now()
	tables := byTable(ops)
	out := Precheck{Verdict: "ok", Tables: len(tables), Violations: []Violation{}}
	for _, t := range tables {
		out.Violations = append(out.Violations, checkTable(ops, t)...)
	}
	if len(out.Violations) > 0 {
		out.Verdict = "violations"
	}
	out.DurationUs = time.Since(start).Microseconds()
	return out
}

// byTable sorts the operations by table, in the order tables first appear.
func byTable(ops []Op) []*tableOps {
	groups := transactionGroups(ops)
	idx := map[string]*tableOps{}
	var out []*tableOps
	for i, op := range ops {
		t := idx[op.Table]
		if t == nil {
			t = &tableOps{name: op.Table, final: -1, group: groups[op.Table]}
			idx[op.Table] = t
			out = append(out, t)
		}
		t.add(ops, i)
	}
	return out
}

func (t *tableOps) add(ops []Op, i int) {
	op := ops[i]
	switch {
	case op.Op == OpLoad && op.Outcome == OutcomeOK && op.Final:
		if !t.group {
			t.final = i
		}
	case op.Op == OpLoad && op.Outcome == OutcomeOK:
		t.reads = append(t.reads, i)
	case op.Op != OpCommit || op.Final || op.Version < 1 || op.Outcome == OutcomeFail:
	case op.Outcome == OutcomeOK:
		t.acked = append(t.acked, i)
		t.writers = append(t.writers, i)
	default:
		t.writers = append(t.writers, i)
	}
}

// checkTable runs the checks on one table. A load at fault in one
// violation is not blamed again by the checks after it.
func checkTable(ops []Op, t *tableOps) []Violation {
	blamed := map[int]bool{}
	vs := lostCommits(ops, t)
	vs = append(vs, twoFiles(ops, t, blamed)...)
	vs = append(vs, staleReads(ops, t, blamed)...)
	return append(vs, futureReads(ops, t, blamed)...)
}

// byVersion maps each version to the commits in idx, in order, and
// lists the versions in order.
func byVersion(ops []Op, idx []int) (map[int64][]int, []int64) {
	by := map[int64][]int{}
	for _, i := range idx {
		by[ops[i].Version] = append(by[ops[i].Version], i)
	}
	vs := make([]int64, 0, len(by))
	for v := range by {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return by, vs
}

// lostCommits checks every acknowledged version against the final load:
// covered by its latest version and, while listed, bound to its file.
func lostCommits(ops []Op, t *tableOps) []Violation {
	if t.final < 0 {
		return nil
	}
	by, versions := byVersion(ops, t.acked)
	var out []Violation
	for _, v := range versions {
		if x, ok := lostCommit(ops, t, by[v], v); ok {
			out = append(out, x)
		}
	}
	return out
}

// lostCommit checks the acknowledged commits of version v.
func lostCommit(ops []Op, t *tableOps, acked []int, v int64) (Violation, bool) {
	f := ops[t.final]
	if v > f.LatestVersion {
		msg := fmt.Sprintf("acknowledged version %d lost, the final load is at version %d", v, f.LatestVersion)
		return violation(ops, KindLostCommit, t.name, v, msg, append(roles(acked, "acknowledged commit"), role(t.final, "final load"))), true
	}
	got, listed := f.Commits[v]
	var other []int
	for _, i := range acked {
		if listed && ops[i].FileName != got {
			other = append(other, i)
		}
	}
	if len(other) == 0 {
		return Violation{}, false
	}
	msg := fmt.Sprintf("acknowledged version %d (%s) replaced by %s in the final load", v, ops[other[0]].FileName, got)
	return violation(ops, KindLostCommit, t.name, v, msg, append(roles(other, "acknowledged commit"), role(t.final, "final load"))), true
}

// binding is an operation binding a version to a file.
type binding struct {
	file  string
	op    int
	acked bool // an acknowledged commit (else a load)
}

// twoFiles finds versions bound to two files.
func twoFiles(ops []Op, t *tableOps, blamed map[int]bool) []Violation {
	by := bindings(ops, t)
	versions := make([]int64, 0, len(by))
	for v := range by {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	var out []Violation
	for _, v := range versions {
		if x, ok := twoFilesAt(ops, t, v, by[v], blamed); ok {
			out = append(out, x)
		}
	}
	return out
}

// bindings lists, per version, the first operation binding it to each
// file: acknowledged commits, then loads that saw it as their head.
func bindings(ops []Op, t *tableOps) map[int64][]binding {
	by := map[int64][]binding{}
	add := func(v int64, b binding) {
		for _, x := range by[v] {
			if x.file == b.file {
				return
			}
		}
		by[v] = append(by[v], b)
	}
	for _, i := range t.acked {
		add(ops[i].Version, binding{ops[i].FileName, i, true})
	}
	for _, i := range t.reads {
		if ops[i].Head != "" && ops[i].LatestVersion > 0 {
			add(ops[i].LatestVersion, binding{ops[i].Head, i, false})
		}
	}
	return by
}

// twoFilesAt reports a version bound to two files by acknowledged commits
// or loads, or by a load and the final load (an acknowledged commit the
// final load contradicts is a lost commit).
func twoFilesAt(ops []Op, t *tableOps, v int64, bs []binding, blamed map[int]bool) (Violation, bool) {
	if len(bs) == 1 {
		return loadAgainstFinal(ops, t, v, bs[0], blamed)
	}
	files, refs, acked := make([]string, len(bs)), make([]OpRef, len(bs)), 0
	for k, b := range bs {
		files[k], refs[k] = b.file, role(b.op, "load")
		if b.acked {
			refs[k].Role, acked = "acknowledged commit", acked+1
		} else {
			blamed[b.op] = true
		}
	}
	how := "bound to"
	if acked >= 2 {
		how = "acknowledged with"
	}
	msg := fmt.Sprintf("not linearizable, version %d %s two files, %s", v, how, strings.Join(files, " and "))
	return violation(ops, KindTwoFiles, t.name, v, msg, atFaultFirst(refs)), true
}

// loadAgainstFinal reports a load that saw version v bound to another
// file than the final load lists.
func loadAgainstFinal(ops []Op, t *tableOps, v int64, b binding, blamed map[int]bool) (Violation, bool) {
	if t.final < 0 || b.acked {
		return Violation{}, false
	}
	ff, listed := ops[t.final].Commits[v]
	if !listed || ff == b.file {
		return Violation{}, false
	}
	blamed[b.op] = true
	msg := fmt.Sprintf("not linearizable, version %d bound to two files, %s and %s", v, b.file, ff)
	return violation(ops, KindTwoFiles, t.name, v, msg, []OpRef{role(b.op, "load"), role(t.final, "final load")}), true
}

// atFaultFirst puts the last operation (the latest binding, which
// contradicts the first) first.
func atFaultFirst(refs []OpRef) []OpRef {
	return append([]OpRef{refs[len(refs)-1]}, refs[:len(refs)-1]...)
}

// staleReads finds loads that saw a version older than one acknowledged
// before they began.
func staleReads(ops []Op, t *tableOps, blamed map[int]bool) []Violation {
	acked := slices.Clone(t.acked)
	sort.SliceStable(acked, func(a, b int) bool { return ops[acked[a]].CompleteNs < ops[acked[b]].CompleteNs })
	reads := slices.Clone(t.reads)
	sort.SliceStable(reads, func(a, b int) bool { return ops[reads[a]].InvokeNs < ops[reads[b]].InvokeNs })
	var out []Violation
	floor, next := -1, 0 // the highest version acknowledged so far
	for _, r := range reads {
		for ; next < len(acked) && ops[acked[next]].CompleteNs < ops[r].InvokeNs; next++ {
			if floor < 0 || ops[acked[next]].Version > ops[floor].Version {
				floor = acked[next]
			}
		}
		if floor >= 0 && ops[r].LatestVersion < ops[floor].Version && !blamed[r] {
			out = append(out, staleRead(ops, t, r, floor))
		}
	}
	return out
}

func staleRead(ops []Op, t *tableOps, r, floor int) Violation {
	v := ops[floor].Version
	msg := fmt.Sprintf("not linearizable, stale read: a load saw version %d after version %d was acknowledged",
		ops[r].LatestVersion, v)
	return violation(ops, KindStaleRead, t.name, v, msg, []OpRef{role(r, "stale read"), role(floor, "acknowledged commit")})
}

// firstWriters is, per version, when the first commit that could have
// made it began: of that version, and of every version below it.
type firstWriters struct {
	upTo   []int          // upTo[v]: the latest-beginning of the first writers of versions 1..v (-1: one has none)
	byFile map[string]int // "version file": the first writer of that file at that version
}

func newFirstWriters(ops []Op, t *tableOps) firstWriters {
	first := make([]int, len(t.writers)+1) // no more versions than commits
	for v := range first {
		first[v] = -1
	}
	fw := firstWriters{upTo: first, byFile: map[string]int{}}
	for _, i := range t.writers {
		if v := ops[i].Version; v < int64(len(first)) && (first[v] < 0 || ops[i].InvokeNs < ops[first[v]].InvokeNs) {
			first[v] = i
		}
		k := fileKey(ops[i].Version, ops[i].FileName)
		if w, ok := fw.byFile[k]; !ok || ops[i].InvokeNs < ops[w].InvokeNs {
			fw.byFile[k] = i
		}
	}
	fw.accumulate(ops)
	return fw
}

// accumulate turns the first writer of each version into the latest
// beginning among the first writers of it and every version below.
func (fw firstWriters) accumulate(ops []Op) {
	for v := 2; v < len(fw.upTo); v++ {
		prev := fw.upTo[v-1]
		if prev < 0 || (fw.upTo[v] >= 0 && ops[prev].InvokeNs > ops[fw.upTo[v]].InvokeNs) {
			fw.upTo[v] = prev
		}
	}
}

func fileKey(v int64, file string) string { return fmt.Sprint(v, " ", file) }

// needed is the commit a load of version v (head file) waited for: the
// one that began last among the first writers it needs; ok is false when
// no commit could have made what it saw.
func (fw firstWriters) needed(ops []Op, v int64, file string) (int, bool) {
	if v >= int64(len(fw.upTo)) || fw.upTo[v] < 0 {
		return -1, false
	}
	w := fw.upTo[v]
	if file == "" {
		return w, true
	}
	byFile, ok := fw.byFile[fileKey(v, file)]
	if !ok {
		return -1, false
	}
	if ops[byFile].InvokeNs > ops[w].InvokeNs {
		w = byFile
	}
	return w, true
}

// futureReads finds loads that saw a version before any commit that could
// have made it began, or a version no commit could have made.
func futureReads(ops []Op, t *tableOps, blamed map[int]bool) []Violation {
	fw := newFirstWriters(ops, t)
	var out []Violation
	for _, r := range t.reads {
		v := ops[r].LatestVersion
		if v < 1 || blamed[r] {
			continue
		}
		w, ok := fw.needed(ops, v, ops[r].Head)
		switch {
		case !ok:
			msg := fmt.Sprintf("not linearizable, future read: a load saw version %d%s, which no commit could have made", v, headOf(ops[r]))
			out = append(out, violation(ops, KindFutureRead, t.name, v, msg, []OpRef{role(r, "future read")}))
		case ops[w].InvokeNs > ops[r].CompleteNs:
			out = append(out, futureRead(ops, t, r, w))
		}
	}
	return out
}

func futureRead(ops []Op, t *tableOps, r, w int) Violation {
	msg := fmt.Sprintf("not linearizable, future read: a load saw version %d%s before the first commit of version %d (%s) began",
		ops[r].LatestVersion, headOf(ops[r]), ops[w].Version, ops[w].FileName)
	return violation(ops, KindFutureRead, t.name, ops[r].LatestVersion, msg, []OpRef{role(r, "future read"), role(w, "first commit")})
}

func headOf(op Op) string {
	if op.Head == "" {
		return ""
	}
	return " (" + op.Head + ")"
}

func role(i int, r string) OpRef { return OpRef{Index: i, Role: r} }

func roles(idx []int, r string) []OpRef {
	out := make([]OpRef, len(idx))
	for k, i := range idx {
		out[k] = role(i, r)
	}
	return out
}

// violation fills in the operations it names and its message, which
// names them too.
func violation(ops []Op, kind, table string, v int64, msg string, refs []OpRef) Violation {
	names := make([]string, len(refs))
	for k := range refs {
		refs[k] = refOf(ops, refs[k])
		names[k] = refs[k].String()
	}
	msg = fmt.Sprintf("table %s: %s: %s", table, msg, strings.Join(names, "; "))
	return Violation{Kind: kind, Table: table, Version: v, Message: msg, Ops: refs}
}

func refOf(ops []Op, r OpRef) OpRef {
	op := ops[r.Index]
	r.Client, r.Op, r.Outcome, r.InvokeNs, r.CompleteNs, r.Final = op.Client, op.Op, op.Outcome, op.InvokeNs, op.CompleteNs, op.Final
	r.Version, r.FileName = op.Version, op.FileName
	if op.Op == OpLoad {
		r.Version, r.FileName = op.LatestVersion, op.Head
	}
	if op.Final {
		r.FileName = "" // what a final load lists, its message says
	}
	return r
}

// String names the operation: its role, index, client, what it did and
// its interval.
func (r OpRef) String() string {
	what := fmt.Sprintf("version %d", r.Version)
	if r.FileName != "" {
		what += " " + r.FileName
	}
	if r.Op == OpLoad {
		what = "saw " + what
	}
	return fmt.Sprintf("%s #%d (client %d, %s %s, %s, %s to %s)", r.Role, r.Index, r.Client, r.Op, what, r.Outcome,
		fmtNs(r.InvokeNs), fmtNs(r.CompleteNs))
}

func fmtNs(ns int64) string { return time.Duration(ns).String() }
