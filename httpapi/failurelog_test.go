package httpapi_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/deltaapi"
	"github.com/raftcat/raftcat/httpapi/ucrest"
	"github.com/raftcat/raftcat/internal/fakecluster"
	"github.com/raftcat/raftcat/internal/logging"
)

// logBuffer collects log output from concurrent writers.
type logBuffer = logging.Capture

// startLoggedAPI serves the protocols with every log line, debug
// included, going to the returned buffer.
func startLoggedAPI(t *testing.T) (*api, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	node := fakecluster.New("node1", "file://"+t.TempDir()+"/warehouse")
	core := httpapi.New(node, httpapi.Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ucrest.Register(core)
	deltaapi.Register(core, deltaapi.Config{})
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(srv.Close)
	node.SetHTTPAddr(strings.TrimPrefix(srv.URL, "http://"))
	return &api{t: t, base: srv.URL}, logs
}

// purgedUnreadable is a managed table whose version 2 backfill purged
// while its files were never written: a replay of it cannot be decided.
func purgedUnreadable(a *api) *managedTable {
	a.t.Helper()
	m := a.newManaged()
	for v := int64(1); v <= 3; v++ {
		m.mustUpdate("", commit(v))
	}
	m.mustUpdate("", backfill(2))
	return m
}

// A commit whose state is unknown stays a 500 (the protocol's answer),
// but any client can ask for it as often as it likes: it is logged once a
// minute per table, not once per request.
func TestFastUnknownCommitStateIsLoggedOncePerTable(t *testing.T) {
	a, logs := startLoggedAPI(t)
	first, second := purgedUnreadable(a), purgedUnreadable(a)
	for range 25 {
		deltaErr(t, first.update("", commit(2)), 500, "CommitStateUnknownException", "retry")
	}
	deltaErr(t, second.update("", commit(2)), 500, "CommitStateUnknownException", "retry")

	for _, m := range []*managedTable{first, second} {
		failed := logs.Lines("level=ERROR", "request failed", "path="+m.path())
		if len(failed) != 1 || !strings.Contains(failed[0], "code=commit-state-unknown") {
			t.Errorf("%s: %d ERROR lines, want 1 naming the code: %q", m.tbl, len(failed), failed)
		}
		full := m.cat + "." + m.sch + "." + m.tbl
		if cause := logs.Lines("level=WARN", "table="+full); len(cause) != 1 {
			t.Errorf("%s: %d WARN lines about it, want 1: %q", m.tbl, len(cause), cause)
		}
	}
	if n := len(logs.Lines("level=ERROR")); n != 2 {
		t.Errorf("%d ERROR lines in all, want 2:\n%s", n, strings.Join(logs.Lines("level=ERROR"), "\n"))
	}
}
