package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A throttled logger writes one record per subject and interval; the
// next one written says how many were held back meanwhile.
func TestThrottledLoggerCountsWhatItHoldsBack(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1700000000, 0)
	h := &throttleHandler{next: slog.NewTextHandler(&buf, nil), keys: []string{"table"},
		st: newThrottle(time.Minute, func() time.Time { return now })}
	log := slog.New(h).With("component", "x")
	for range 5 {
		log.Warn("cannot compare", "table", "a")
	}
	log.Warn("cannot compare", "table", "b")
	log.Warn("other message", "table", "a")
	log.Warn("no subject")
	log.Warn("no subject")
	now = now.Add(59 * time.Second)
	log.Warn("cannot compare", "table", "a")
	now = now.Add(time.Second)
	log.Warn("cannot compare", "table", "a")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"table=a", "table=b", "other message", "no subject", "no subject", "table=a suppressed=5"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) || (i < len(want)-1 && strings.Contains(lines[i], "suppressed")) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], w)
		}
	}
}

// The subjects remembered are bounded: quiet ones are forgotten first,
// and past the bound a new subject is written without being counted.
func TestThrottleForgetsQuietSubjects(t *testing.T) {
	now := time.Unix(1700000000, 0)
	th := newThrottle(time.Minute, func() time.Time { return now })
	for i := range maxSubjects {
		if ok, _ := th.admit(string(rune(i))); !ok {
			t.Fatalf("subject %d refused on first sight", i)
		}
	}
	if ok, _ := th.admit("new"); !ok || len(th.subjects) != maxSubjects {
		t.Fatalf("a new subject past the bound: admitted %v, %d remembered", ok, len(th.subjects))
	}
	now = now.Add(time.Minute)
	if ok, _ := th.admit("new"); !ok || len(th.subjects) != 1 {
		t.Fatalf("after a quiet minute: admitted %v, %d remembered, want 1", ok, len(th.subjects))
	}
}
