package httpapi_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/deltaapi"
	"github.com/raftcat/raftcat/httpapi/ucrest"
	"github.com/raftcat/raftcat/internal/fakecluster"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// This package's tests come in two tiers.
//
// The fast tier, the tests named TestFast*, checks request -> answer of the
// protocols' handlers (wire bodies, statuses, error envelopes) against a
// node without raft: fakecluster applies every command at once in
// memory, over real HTTP. Run it alone with
//
//	go test ./httpapi -run '^TestFast'
//
// Setting RAFTCAT_FAST_TIER_ON_RAFT=1 runs the same tests against a real
// one-node cluster instead, to check the fake answers as raft does.
//
// The other tests run on real raft (testcluster): the admin endpoints, and
// clients writing across a three-node cluster.

// startAPI serves the protocols for the calling fast-tier test and returns
// a client for them.
func startAPI(t *testing.T) *api { return startAPIWith(t, deltaapi.Config{}) }

func startAPIWith(t *testing.T, delta deltaapi.Config) *api {
	t.Helper()
	if os.Getenv("RAFTCAT_FAST_TIER_ON_RAFT") != "" {
		creds, _ := delta.Credentials.(storage.StaticCredentials)
		nodes := testcluster.Start(t, 1, testcluster.Options{Credentials: creds})
		return &api{t: t, base: nodes[0].URL}
	}
	if delta.Objects == nil {
		objects := storage.NewBlobs(storage.BlobOptions{})
		t.Cleanup(func() { objects.Close() })
		delta.Objects = objects
	}
	node := fakecluster.New("node1", "file://"+t.TempDir()+"/warehouse")
	core := httpapi.New(node, httpapi.Config{Logger: testLogger()})
	ucrest.Register(core)
	deltaapi.Register(core, delta)
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(srv.Close)
	node.SetHTTPAddr(strings.TrimPrefix(srv.URL, "http://"))
	return &api{t: t, base: srv.URL}
}

// startRaftAPI starts a real one-node cluster for the calling test and
// returns a client for it.
func startRaftAPI(t *testing.T) *api {
	t.Helper()
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	return &api{t: t, base: nodes[0].URL}
}

// testLogger discards the log unless RAFTCAT_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("RAFTCAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
