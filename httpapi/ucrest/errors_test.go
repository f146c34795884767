package ucrest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// domainCodes lists every fsm.Code (fsm names each one it defines).
func domainCodes() []fsm.Code {
	var out []fsm.Code
	for c := fsm.Code(1); !strings.HasPrefix(c.String(), "code("); c++ {
		out = append(out, c)
	}
	return out
}

// Every domain code has an answer of its own in UC REST, and only a
// commit whose state is unknown is a 5xx.
func TestEveryDomainCodeIsMapped(t *testing.T) {
	codes := domainCodes()
	if len(codes) < 15 {
		t.Fatalf("found %d domain codes, want at least 15", len(codes))
	}
	for _, c := range codes {
		if _, ok := byCode[c]; !ok {
			t.Errorf("%v is not mapped", c)
			continue
		}
		status, body := errorMapping{}.Render(httpapi.Problem{Code: c, Message: "m"})
		if wantServerError := c == fsm.CodeCommitStateUnknown; (status >= 500) != wantServerError || status < 400 || body == nil {
			t.Errorf("%v renders as %d %v", c, status, body)
		}
	}
	unknown := httpapi.Problem{Code: fsm.Code(250), Message: "m"}
	if status, _ := (errorMapping{}).Render(unknown); status != http.StatusInternalServerError {
		t.Errorf("an unknown code renders as %d, want 500", status)
	}
}
