package chaos

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// WriteReport writes a self-contained HTML report of a run: the verdict,
// the violations the pre-check proved with the operations they name, a
// timeline of the faults (and of those operations), commit latency over
// time, and porcupine's visualization of every table's history.
func WriteReport(w io.Writer, ops []Op, sum Summary) error {
	vis, note, err := visualization(ops, sum)
	if err != nil {
		return err
	}
	end := int64(1)
	for _, op := range ops {
		if op.Outcome != OutcomeUnknown {
			end = max(end, op.CompleteNs)
		}
	}
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>raftcat chaos report</title>
<style>%s</style></head><body>
<h1>raftcat chaos report</h1><table>`, reportCSS)
	for _, r := range summaryRows(sum) {
		fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td></tr>", r[0], r[1])
	}
	fmt.Fprint(w, "</table>")
	writeViolations(w, ops, sum.Result)
	fmt.Fprint(w, "<h2>Faults and commit latency</h2>")
	writeTimeline(w, ops, sum.Faults, offending(sum.Result), end)
	writeFaults(w, sum.Faults)
	fmt.Fprintf(w, "<h2>History (porcupine: %s)</h2>", note)
	fmt.Fprintf(w, `<iframe style="width:100%%;height:80vh;border:1px solid #ccc" srcdoc="%s"></iframe>`, html.EscapeString(vis))
	_, err = fmt.Fprint(w, "</body></html>\n")
	return err
}

const reportCSS = `body{font-family:sans-serif;margin:2em}td,th{padding:2px 12px;text-align:left}.bad{color:#b00}.ok{color:#070}
.violation{border-left:4px solid #b00;padding-left:1em;margin:1em 0}table.ops{border-collapse:collapse;font-size:90%}
table.ops td,table.ops th{border-bottom:1px solid #ddd}tr.offending{background:#fdd;font-weight:bold}
rect.offending{fill:#c00;fill-opacity:.8}`

func summaryRows(sum Summary) [][2]string {
	verdict := `<span class="ok">no violation</span>`
	if !sum.OK() {
		verdict = `<span class="bad">VIOLATIONS</span>`
	}
	rows := [][2]string{{"verdict", verdict}, {"seed", fmt.Sprint(sum.Seed)}, {"nodes", fmt.Sprint(sum.Nodes)},
		{"operations", fmt.Sprint(sum.Operations)}, {"acknowledged commits", fmt.Sprint(sum.AcknowledgedCommits)},
		{"lost commits", fmt.Sprint(sum.LostCommits)}, {"linearizable", fmt.Sprint(sum.Linearizable)},
		{"decided by", sum.DecidedBy}, {"converged", fmt.Sprint(sum.Converged)},
		{"longest unavailability", fmt.Sprintf("%d ms", sum.LongestUnavailableMs)}}
	if p := sum.Precheck; p != nil {
		rows = append(rows, [2]string{"pre-check", fmt.Sprintf("%s (%d violations, %d µs)", p.Verdict, len(p.Violations), p.DurationUs)})
	}
	return rows
}

// visualization is porcupine's visualization of the history (in part
// when it is long and linearizable, or when the pre-check decided it
// and porcupine did not search), and what it shows.
func visualization(ops []Op, sum Summary) (string, string, error) {
	info, note := sum.info, "every operation"
	shown := ops
	if sum.Operations > visualizeLimit && (sum.Linearizable || sum.DecidedBy == "precheck") {
		// The visualization of thousands of operations is too large for a browser.
		shown = firstPerTable(ops, visualizeLimit/4)
		note = fmt.Sprintf("the first %d operations of each table", visualizeLimit/4)
	}
	if len(shown) != len(ops) || info.PartialLinearizations() == nil {
		_, info = porcupine.CheckOperationsVerbose(tableModel, operations(shown), visualizeBudget)
	}
	if len(shown) == len(ops) {
		info.AddAnnotations(annotations(ops, sum.Result))
	}
	var vis bytes.Buffer
	if err := porcupine.Visualize(tableModel, info, &vis); err != nil {
		return "", "", fmt.Errorf("visualize history: %w", err)
	}
	return vis.String(), note, nil
}

// visualizeBudget bounds the search for a visualization the check did not make.
const visualizeBudget = 10 * time.Second

// annotations mark the operations the pre-check's violations name in
// their client's row of porcupine's visualization.
func annotations(ops []Op, res Result) []porcupine.Annotation {
	if res.Precheck == nil {
		return nil
	}
	var out []porcupine.Annotation
	for _, v := range res.Precheck.Violations {
		for _, r := range v.Ops {
			out = append(out, porcupine.Annotation{ClientId: r.Client, Start: r.InvokeNs, End: r.CompleteNs,
				Description: r.Role, Details: v.Message, BackgroundColor: "#fcc"})
		}
	}
	return out
}

// offending is the set of operations (history indices) the pre-check's
// violations name.
func offending(res Result) map[int]bool {
	out := map[int]bool{}
	if res.Precheck != nil {
		for _, v := range res.Precheck.Violations {
			for _, r := range v.Ops {
				out[r.Index] = true
			}
		}
	}
	return out
}

// writeViolations lists the violations: each the pre-check proved with
// the operations it names, among their neighbours in the table's
// history, then the others.
func writeViolations(w io.Writer, ops []Op, res Result) {
	if len(res.Violations) == 0 {
		return
	}
	fmt.Fprint(w, `<section id="violations"><h2>Violations</h2>`)
	proved := map[string]bool{}
	if res.Precheck != nil {
		for _, v := range res.Precheck.Violations {
			proved[v.Message] = true
			writeViolation(w, ops, v)
		}
	}
	for _, v := range res.Violations {
		if !proved[v] {
			fmt.Fprintf(w, `<p class="bad">%s</p>`, html.EscapeString(v))
		}
	}
	fmt.Fprint(w, "</section>")
}

func writeViolation(w io.Writer, ops []Op, v Violation) {
	fmt.Fprintf(w, `<div class="violation"><p class="bad"><b>%s</b>: %s</p>`, html.EscapeString(v.Kind), html.EscapeString(v.Message))
	at := map[int]string{}
	for _, r := range v.Ops {
		at[r.Index] = r.Role
	}
	fmt.Fprint(w, `<table class="ops"><tr><th>#</th><th>role</th><th>client</th><th>operation</th><th>outcome</th>`+
		`<th>version</th><th>file</th><th>invoked</th><th>completed</th></tr>`)
	for _, i := range neighbours(ops, v.Table, at, reportContext) {
		writeOpRow(w, ops[i], i, at)
	}
	fmt.Fprint(w, "</table></div>")
}

// reportContext is how many operations of the table before and after
// each offending one the report shows.
const reportContext = 4

// neighbours lists, in history order, the offending operations and up to
// n operations of the same table on either side of each.
func neighbours(ops []Op, table string, at map[int]string, n int) []int {
	keep := map[int]bool{}
	for i := range at {
		keep[i] = true
		for j, k := i-1, 0; j >= 0 && k < n; j-- {
			if ops[j].Table == table {
				keep[j], k = true, k+1
			}
		}
		for j, k := i+1, 0; j < len(ops) && k < n; j++ {
			if ops[j].Table == table {
				keep[j], k = true, k+1
			}
		}
	}
	out := make([]int, 0, len(keep))
	for i := range keep {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

func writeOpRow(w io.Writer, op Op, i int, at map[int]string) {
	r := refOf([]Op{op}, OpRef{})
	class, role := "", at[i]
	if _, ok := at[i]; ok {
		class = ` class="offending"`
	}
	what, version := op.Op, fmt.Sprint(r.Version)
	if op.Final {
		what = "final " + what
	}
	if op.Op == OpUpdate {
		version = ""
	}
	fmt.Fprintf(w, "<tr%s><td>#%d</td><td>%s</td><td>%d</td><td>%s</td><td>%s %s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>",
		class, i, html.EscapeString(role), op.Client, what, op.Outcome, statusOf(op), version, html.EscapeString(r.FileName),
		fmtNs(op.InvokeNs), fmtNs(op.CompleteNs))
}

func statusOf(op Op) string {
	if op.Status == 0 {
		return ""
	}
	return fmt.Sprint(op.Status)
}

// writeTimeline draws faults as bands and each acknowledged commit's
// latency as a dot, on one time axis.
func writeTimeline(w io.Writer, ops []Op, faults []Fault, marked map[int]bool, end int64) {
	const width, height, top = 1000.0, 260.0, 40.0
	x := func(ns int64) float64 { return width * float64(ns) / float64(end) }
	maxLat := 1.0
	for _, op := range ops {
		if op.Op == OpCommit && op.Outcome == OutcomeOK {
			maxLat = max(maxLat, float64(op.CompleteNs-op.InvokeNs)/1e6)
		}
	}
	logMax := math.Log10(maxLat + 1)
	y := func(ms float64) float64 { return height - (height-top)*math.Log10(ms+1)/logMax }
	fmt.Fprintf(w, `<svg width="%.0f" height="%.0f" style="border:1px solid #ccc">`, width, height+20)
	for _, f := range faults {
		fmt.Fprintf(w, `<rect x="%.1f" y="0" width="%.1f" height="%.0f" fill="%s"><title>%s</title></rect>`,
			x(f.StartNs), x(f.EndNs)-x(f.StartNs), height, faultColor(f.Kind), html.EscapeString(faultTitle(f)))
		fmt.Fprintf(w, `<text x="%.1f" y="14" font-size="11">%s %s</text>`, x(f.StartNs)+2, f.Kind, f.Target)
	}
	for _, op := range ops {
		if op.Op == OpCommit && op.Outcome == OutcomeOK {
			ms := float64(op.CompleteNs-op.InvokeNs) / 1e6
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="1.5" fill="#36c"/>`, x(op.CompleteNs), y(ms))
		}
	}
	writeMarks(w, ops, marked, x, height)
	fmt.Fprintf(w, `<text x="4" y="%.0f" font-size="11">0 s</text><text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%v</text>`,
		height+15, width-4, height+15, time.Duration(end).Round(time.Second))
	fmt.Fprintf(w, `<text x="4" y="%.0f" font-size="11">commit latency, log scale, max %.0f ms</text></svg>`, top-6, maxLat)
}

// writeMarks marks the offending operations on the timeline: a band
// over each one's interval (at least 2 px wide).
func writeMarks(w io.Writer, ops []Op, marked map[int]bool, x func(int64) float64, height float64) {
	idx := make([]int, 0, len(marked))
	for i := range marked {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		op := ops[i]
		fmt.Fprintf(w, `<rect class="offending" x="%.1f" y="20" width="%.1f" height="%.0f"><title>#%d client %d %s (%s to %s)</title></rect>`,
			x(op.InvokeNs), max(2, x(op.CompleteNs)-x(op.InvokeNs)), height-20, i, op.Client, op.Op, fmtNs(op.InvokeNs), fmtNs(op.CompleteNs))
	}
}

// visualizeLimit is the largest history shown whole in the report.
const visualizeLimit = 2000

// firstPerTable keeps the first n operations of every table.
func firstPerTable(ops []Op, n int) []Op {
	count := map[string]int{}
	var out []Op
	for _, op := range ops {
		if count[op.Table] < n {
			count[op.Table]++
			out = append(out, op)
		}
	}
	return out
}

// faultColor tells the kinds of faults apart on the timeline: a pause,
// a power cut, a failing disk, the others (kills and network faults).
func faultColor(kind string) string {
	switch kind {
	case "pause":
		return "#ffd"
	case "power-cut", "power-cut-all", "torn":
		return "#fcb"
	}
	if isDiskKind(kind) {
		return "#dde8ff"
	}
	return "#fdd"
}

// faultTitle is a fault's hover text: kind, target and what the node did.
func faultTitle(f Fault) string {
	t := fmt.Sprintf("%s %s (leader %v)", f.Kind, f.Target, f.Leader)
	if f.Detail != "" {
		t += ", " + f.Detail
	}
	if f.Outcome != "" {
		t += ": " + f.Outcome
	}
	return t
}

// writeFaults lists the faults under the timeline: what was done, to
// whom, and what the node did.
func writeFaults(w io.Writer, faults []Fault) {
	if len(faults) == 0 {
		return
	}
	fmt.Fprint(w, `<table class="ops" id="faults"><tr><th>#</th><th>kind</th><th>target</th><th>from</th><th>to</th>`+
		`<th>detail</th><th>outcome</th><th>exit status</th><th>commits acknowledged</th><th>recovered in</th></tr>`)
	for i, f := range faults {
		target := f.Target
		if f.Leader {
			target += " (leader)"
		}
		exit := ""
		if f.ExitStatus != nil {
			exit = fmt.Sprint(*f.ExitStatus)
		}
		fmt.Fprintf(w, "<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d ms</td></tr>",
			i+1, html.EscapeString(f.Kind), html.EscapeString(target), fmtNs(f.StartNs), fmtNs(f.EndNs),
			html.EscapeString(f.Detail), html.EscapeString(f.Outcome), exit, f.Acknowledged, f.RecoveryMs)
	}
	fmt.Fprint(w, "</table>")
}
