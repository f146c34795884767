package chaos

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// WriteReport writes a self-contained HTML report of a run: the verdict,
// a timeline of the faults, commit latency over time, and porcupine's
// visualization of every table's history.
func WriteReport(w io.Writer, ops []Op, sum Summary) error {
	info, note := sum.info, "every operation"
	if sum.Linearizable && sum.Operations > visualizeLimit {
		// A clean history is shown in part: the visualization of thousands of
		// operations is too large for a browser.
		_, info = porcupine.CheckOperationsVerbose(tableModel, operations(firstPerTable(ops, visualizeLimit/4)), time.Minute)
		note = fmt.Sprintf("the first %d operations of each table", visualizeLimit/4)
	}
	var vis bytes.Buffer
	if err := porcupine.Visualize(tableModel, info, &vis); err != nil {
		return fmt.Errorf("visualize history: %w", err)
	}
	end := int64(1)
	for _, op := range ops {
		if op.Outcome != OutcomeUnknown {
			end = max(end, op.CompleteNs)
		}
	}
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>raftcat chaos report</title>
<style>body{font-family:sans-serif;margin:2em}td{padding:2px 12px}.bad{color:#b00}.ok{color:#070}</style></head><body>
<h1>raftcat chaos report</h1><table>`)
	verdict := `<span class="ok">no violation</span>`
	if !sum.OK() {
		verdict = `<span class="bad">VIOLATIONS</span>`
	}
	rows := [][2]string{{"verdict", verdict}, {"seed", fmt.Sprint(sum.Seed)}, {"nodes", fmt.Sprint(sum.Nodes)},
		{"operations", fmt.Sprint(sum.Operations)}, {"acknowledged commits", fmt.Sprint(sum.AcknowledgedCommits)},
		{"lost commits", fmt.Sprint(sum.LostCommits)}, {"linearizable", fmt.Sprint(sum.Linearizable)},
		{"converged", fmt.Sprint(sum.Converged)}, {"longest unavailability", fmt.Sprintf("%d ms", sum.LongestUnavailableMs)}}
	for _, r := range rows {
		fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td></tr>", r[0], r[1])
	}
	fmt.Fprint(w, "</table>")
	for _, v := range sum.Violations {
		fmt.Fprintf(w, `<p class="bad">%s</p>`, html.EscapeString(v))
	}
	fmt.Fprint(w, "<h2>Faults and commit latency</h2>")
	writeTimeline(w, ops, sum.Faults, end)
	fmt.Fprintf(w, "<h2>History (porcupine: %s)</h2>", note)
	fmt.Fprintf(w, `<iframe style="width:100%%;height:80vh;border:1px solid #ccc" srcdoc="%s"></iframe>`, html.EscapeString(vis.String()))
	_, err := fmt.Fprint(w, "</body></html>\n")
	return err
}

// writeTimeline draws faults as bands and each acknowledged commit's
// latency as a dot, on one time axis.
func writeTimeline(w io.Writer, ops []Op, faults []Fault, end int64) {
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
		color := "#fdd"
		if f.Kind == "pause" {
			color = "#ffd"
		}
		fmt.Fprintf(w, `<rect x="%.1f" y="0" width="%.1f" height="%.0f" fill="%s"><title>%s %s (leader %v)</title></rect>`,
			x(f.StartNs), x(f.EndNs)-x(f.StartNs), height, color, f.Kind, f.Target, f.Leader)
		fmt.Fprintf(w, `<text x="%.1f" y="14" font-size="11">%s %s</text>`, x(f.StartNs)+2, f.Kind, f.Target)
	}
	for _, op := range ops {
		if op.Op == OpCommit && op.Outcome == OutcomeOK {
			ms := float64(op.CompleteNs-op.InvokeNs) / 1e6
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="1.5" fill="#36c"/>`, x(op.CompleteNs), y(ms))
		}
	}
	fmt.Fprintf(w, `<text x="4" y="%.0f" font-size="11">0 s</text><text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%v</text>`,
		height+15, width-4, height+15, time.Duration(end).Round(time.Second))
	fmt.Fprintf(w, `<text x="4" y="%.0f" font-size="11">commit latency, log scale, max %.0f ms</text></svg>`, top-6, maxLat)
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
