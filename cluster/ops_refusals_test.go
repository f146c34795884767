package cluster_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// adminErr checks an admin error: exactly {"error": message, "code":
// status}, the message containing each of want.
func adminErr(t *testing.T, r testcluster.Response, status int, want ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	var keys []string
	for k := range r.Body {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"code", "error"}) {
		t.Fatalf("error body keys %v, want [code error]: %s", keys, r.Raw)
	}
	if code, _ := r.Body["code"].(float64); int(code) != status {
		t.Fatalf("error code %v, want %d", r.Body["code"], status)
	}
	msg, _ := r.Body["error"].(string)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("error %q does not contain %q", msg, w)
		}
	}
}

// Membership requests that the cluster's membership makes impossible are
// the client's mistake (a 400, as /v1/cluster/leave of the only voter
// already is), not a server error, and they change nothing.
func TestImpossibleMembershipRequestsAreClientErrors(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	only := testcluster.Leader(t, nodes)
	before := getDigest(t, only)

	t.Run("removing the last voter", func(t *testing.T) {
		r := testcluster.Do(t, http.MethodPost, only.URL+"/v1/cluster/remove-node", map[string]any{"id": only.ID()})
		adminErr(t, r, http.StatusBadRequest, "only voter", only.ID())
	})
	t.Run("handing leadership over without another voter", func(t *testing.T) {
		r := testcluster.Do(t, http.MethodPost, only.URL+"/v1/cluster/transfer-leadership", map[string]any{})
		adminErr(t, r, http.StatusBadRequest, "no other voter")
	})
	t.Run("handing leadership to the leader itself", func(t *testing.T) {
		r := testcluster.Do(t, http.MethodPost, only.URL+"/v1/cluster/transfer-leadership", map[string]any{"id": only.ID()})
		adminErr(t, r, http.StatusBadRequest, "no other voter", "already leads")
	})

	if !only.IsLeader() {
		t.Fatal("the only voter no longer leads after the refused requests")
	}
	if got := memberIDs(t, only); !slices.Equal(got, []string{only.ID()}) {
		t.Fatalf("members after the refused requests: %v", got)
	}
	if after := getDigest(t, only); after != before {
		t.Fatalf("state changed: %+v, then %+v", before, after)
	}
}
