package sharing_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// Shares and recipients are named case-insensitively: one whose name
// differs only in case from an existing one's is refused as already
// existing, and the message says that the names differ only in case.
func TestCaseTwinNames(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	u := nodes[0].URL + uc
	ok(t, 200, http.MethodPost, u+"/shares", map[string]any{"name": "Sales"})
	ok(t, 200, http.MethodPost, u+"/recipients", map[string]any{"name": "Acme", "authentication_type": "TOKEN"})
	for _, c := range []struct{ path, name, code string }{
		{"/shares", "sales", "SHARE_ALREADY_EXISTS"},
		{"/recipients", "ACME", "RECIPIENT_ALREADY_EXISTS"},
	} {
		r := testcluster.Do(t, http.MethodPost, u+c.path, map[string]any{"name": c.name, "authentication_type": "TOKEN"})
		expectUCError(t, r, 400, c.code)
		if msg, _ := r.Body["message"].(string); !strings.Contains(msg, "differs only in case") {
			t.Fatalf("%s %s: message %q does not say the names differ only in case", c.path, c.name, msg)
		}
	}
}
