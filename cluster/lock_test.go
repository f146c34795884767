package cluster_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestADataDirInUseIsRefusedAtOnce: a second node on a running node's
// data directory is refused at once, told the holder's pid, and the
// first one is not disturbed.
func TestADataDirInUseIsRefusedAtOnce(t *testing.T) {
	nd := testcluster.Start(t, 1, testcluster.Options{})[0]
	_, err := cluster.Open(cluster.Config{NodeID: "second", DataDir: nd.Dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
		BootstrapExpect: 1, DisableReadLease: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if !errors.Is(err, cluster.ErrDataDirInUse) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Fatalf("a second node on a data directory in use: %v", err)
	}
	createCatalogs(t, nd.URL, "still_served")
	nd.Stop()
	nd.Restart(t)
	testcluster.WaitReady(t, nd)
}
