package chaos

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestReportShowsVerdictFaultsAndHistory(t *testing.T) {
	ops := h{
		commit(0, "t", 1, "a1", 0, 1_000_000, OutcomeOK, 200),
		load(1, "t", 0, 2_000_000, 3_000_000), // stale read
		final("t", 1, nil),
	}
	sum := Summary{Result: Check(ops, 10*time.Second),
		Faults: []Fault{{Kind: "kill", Target: "node2", Leader: true, StartNs: 500_000, EndNs: 1_500_000}}}
	var buf bytes.Buffer
	if err := WriteReport(&buf, ops, sum); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"VIOLATIONS", "not linearizable", "<svg", "kill node2", "<iframe", "srcdoc="} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// The report lists the violations the pre-check proved at the top, each
// with the operations it names marked among their neighbours, and marks
// those operations on the timeline.
func TestReportHighlightsTheViolation(t *testing.T) {
	doc := doctorStaleRead(bigHistory())
	sum := Summary{Result: Check(doc.ops, 5*time.Minute)}
	var buf bytes.Buffer
	if err := WriteReport(&buf, doc.ops, sum); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	section := strings.Index(page, `<section id="violations">`)
	if section < 0 || section > strings.Index(page, "<svg") {
		t.Fatal("no violations section before the timeline")
	}
	for _, want := range []string{"<b>stale-read</b>",
		fmt.Sprintf(`<tr class="offending"><td>#%d</td><td>stale read</td>`, doc.at),
		fmt.Sprintf(`<tr class="offending"><td>#%d</td><td>acknowledged commit</td>`, doc.also),
		`<rect class="offending" `, fmt.Sprintf("<title>#%d client %d load", doc.at, doc.ops[doc.at].Client)} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(page, `<tr class="offending">`); n != 2 {
		t.Errorf("%d operations marked offending, want 2", n)
	}
	if rows := strings.Count(page, "<tr><td>#"); rows < 2*reportContext {
		t.Errorf("%d neighbouring operations shown, want at least %d", rows, 2*reportContext)
	}
	buf.Reset()
	clean := genHistory(2, 300)
	if err := WriteReport(&buf, clean, Summary{Result: Check(clean, time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `class="offending"`) || strings.Contains(buf.String(), `id="violations"`) {
		t.Error("a clean report marks operations")
	}
}
