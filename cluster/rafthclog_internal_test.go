package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A node's first election, with no leader known, is logged at INFO; the
// same line after a leader was lost stays a warning.
func TestFirstElectionIsNotAWarning(t *testing.T) {
	var out bytes.Buffer
	h := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Info, DisableTime: true,
		Output: &levelFilter{l: slog.New(slog.NewTextHandler(&out, nil))}})
	// raft passes its own string types, which hclog prints unquoted.
	h.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	h.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID(""))
	h.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "10.0.0.2:8300", "last-leader-id", "node2")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[1], "level=INFO") ||
		!strings.Contains(lines[2], "level=WARN") {
		t.Fatalf("logged:\n%s", out.String())
	}
}
