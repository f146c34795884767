package httpapi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The HTTP layer reaches the replication layer only through the
// interfaces it declares and package clusterapi: neither the core nor any
// protocol links raft, gossip or the log store.
func TestFastHTTPLayerDoesNotLinkTheReplicationLayer(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/raftcat/raftcat/httpapi/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/raftcat/raftcat/cluster", "github.com/hashicorp/raft", "github.com/hashicorp/memberlist", "go.etcd.io/bbolt"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("httpapi depends on %s", pkg)
			}
		}
	}
}
