package ui

import (
	"time"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/rolling"
)

// The page's charts cover the last span in points of step; its figures
// cover the last figureSpan.
const (
	span       = 10 * time.Minute
	step       = 5 * time.Second
	figureSpan = time.Minute
)

// metrics are the node's rolling metrics the page charts: the commands
// its state machine applied, and the writes it answered with their
// latencies.
type metrics struct {
	commands *rolling.Window
	writes   *rolling.Window
}

func newMetrics() *metrics {
	return &metrics{commands: rolling.New(span, time.Second), writes: rolling.New(span, time.Second)}
}

// observeRequest times the writes this node answers: those of every
// protocol but the status page's and the admin endpoints', to a route.
func (m *metrics) observeRequest(info httpapi.RequestInfo) {
	if !info.Write() || info.Protocol == "ui" || info.Protocol == "admin" || info.Route == "unmatched" {
		return
	}
	m.writes.Observe(time.Now(), info.Duration)
}

// sample reads the node's count of applied commands every interval and
// adds what it grew by, until the node is done.
func (m *metrics) sample(src Source, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	prev := src.CommandsApplied()
	for {
		select {
		case <-src.Done():
			return
		case now := <-tick.C:
			cur := src.CommandsApplied()
			if cur >= prev { // the counter restarts only with the process
				m.commands.Add(now, cur-prev)
			}
			prev = cur
		}
	}
}

// point is one step of the charts.
type point struct {
	AtUnixMs     int64    `json:"t"`
	CommandsPerS float64  `json:"commands_per_s"`
	WritesPerS   float64  `json:"writes_per_s"`
	P99Ms        *float64 `json:"p99_ms"` // null when no write was answered
}

// series returns the charts' points up to now, oldest first.
func (m *metrics) series(now time.Time) []point {
	cmds, writes := m.commands.Series(now, step), m.writes.Series(now, step)
	out := make([]point, len(cmds))
	for i, c := range cmds {
		out[i] = point{AtUnixMs: c.Start.UnixMilli(), CommandsPerS: c.Rate}
		if i < len(writes) {
			out[i].WritesPerS = writes[i].Rate
			out[i].P99Ms = p99Ms(writes[i].P99, writes[i].Observed)
		}
	}
	return out
}

// p99Ms is a latency in milliseconds, or nil when none was observed.
func p99Ms(d time.Duration, observed uint64) *float64 {
	if observed == 0 {
		return nil
	}
	ms := float64(d) / float64(time.Millisecond)
	return &ms
}
