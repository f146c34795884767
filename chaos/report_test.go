package chaos

import (
	"bytes"
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
