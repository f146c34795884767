package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/logging"
)

func TestJSONLinesCarryTheRequestID(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, "json", slog.LevelInfo, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := logging.ContextWithRequestID(context.Background(), "r-1")
	log.With("component", "http").InfoContext(ctx, "about a request", "k", 1)
	log.Info("about nothing")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	var first, second map[string]any
	if json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil {
		t.Fatalf("lines are not JSON: %q", buf.String())
	}
	if first["request_id"] != "r-1" || first["component"] != "http" || second["request_id"] != nil {
		t.Fatalf("request ids: %v / %v", first, second)
	}
}

func TestTextFormatAndUnknownFormat(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, "text", slog.LevelInfo, nil)
	if err != nil {
		t.Fatal(err)
	}
	log.InfoContext(logging.ContextWithRequestID(context.Background(), "abc"), "hello")
	if !strings.Contains(buf.String(), "request_id=abc") {
		t.Fatalf("text line %q", buf.String())
	}
	if _, err := logging.New(&buf, "xml", slog.LevelInfo, nil); err == nil {
		t.Fatal("an unknown format was accepted")
	}
}

func TestRecentKeepsTheLastWarnings(t *testing.T) {
	recent := logging.NewRecent(3)
	var buf bytes.Buffer
	log, _ := logging.New(&buf, "text", slog.LevelError, recent) // warnings are kept even when not written
	log = log.With("node", "n1")
	log.Info("ignored")
	for i := range 5 {
		log.Warn(fmt.Sprintf("w%d", i), "i", i)
	}
	got := recent.Records()
	if len(got) != 3 || got[0].Message != "w2" || got[2].Message != "w4" || got[2].Attrs["node"] != "n1" || got[2].Attrs["i"] != "4" {
		t.Fatalf("recent = %+v", got)
	}
	if buf.Len() != 0 {
		t.Fatalf("warnings below the level were written: %q", buf.String())
	}
}
