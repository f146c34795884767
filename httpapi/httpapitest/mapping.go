// Package httpapitest holds the checks every protocol's tests share.
package httpapitest

import (
	"net/http"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// CheckEveryCodeMapped fails t unless the protocol maps every domain code
// (mapped says whether its table has the code) and renders each as a 4xx,
// except a commit whose state is unknown, which is a 5xx; a code it does
// not know renders as a 500.
func CheckEveryCodeMapped(t testing.TB, m httpapi.ErrorMapping, mapped func(fsm.Code) bool) {
	t.Helper()
	codes := fsm.Codes()
	if len(codes) < 15 {
		t.Fatalf("found %d domain codes, want at least 15", len(codes))
	}
	for _, c := range codes {
		if !mapped(c) {
			t.Errorf("%v is not mapped", c)
			continue
		}
		status, body := m.Render(httpapi.Problem{Code: c, Message: "m"})
		if wantServerError := c == fsm.CodeCommitStateUnknown; (status >= 500) != wantServerError || status < 400 || body == nil {
			t.Errorf("%v renders as %d %v", c, status, body)
		}
	}
	if status, _ := m.Render(httpapi.Problem{Code: fsm.Code(250), Message: "m"}); status != http.StatusInternalServerError {
		t.Errorf("an unknown code renders as %d, want 500", status)
	}
}
