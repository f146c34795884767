package lance

import (
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/httpapitest"
)

// Every domain code has a Lance code, rendered with that code's status.
func TestEveryDomainCodeIsMapped(t *testing.T) {
	httpapitest.CheckEveryCodeMapped(t, errorMapping{}, func(c fsm.Code) bool {
		_, ok := byCode[c]
		return ok
	})
	for c, code := range byCode {
		status, body := errorMapping{}.Render(httpapi.Problem{Code: c, Message: "m"})
		if status != statusOf[code] || body.(map[string]any)["code"] != code {
			t.Errorf("%v renders as %d %v, want %d code %d", c, status, body, statusOf[code], code)
		}
	}
}

// Problems that are not domain errors keep their status, with a code of
// their class.
func TestNonDomainStatusesRender(t *testing.T) {
	for status, code := range map[int]int{400: 13, 404: 4, 405: 0, 406: 0, 413: 13, 418: 13, 422: 13, 429: 21, 500: 18, 503: 17} {
		got, body := errorMapping{}.Render(httpapi.Problem{Status: status, Message: "m"})
		m := body.(map[string]any)
		if got != status || m["code"] != code || m["error"] != "m" {
			t.Errorf("status %d renders as %d %v, want code %d", status, got, m, code)
		}
	}
}
