package iceberg

import (
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/httpapitest"
)

// Every domain code has an answer of its own in the Iceberg protocol, and
// only a commit whose state is unknown is a 5xx.
func TestEveryDomainCodeIsMapped(t *testing.T) {
	httpapitest.CheckEveryCodeMapped(t, errorMapping{}, func(c fsm.Code) bool {
		_, ok := byCode[c]
		return ok
	})
}

// Problems that are not domain errors keep their status, in the envelope.
func TestNonDomainStatusesRender(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 405, 406, 408, 413, 415, 418, 422, 429, 500, 501, 503} {
		got, body := errorMapping{}.Render(httpapi.Problem{Status: status, Message: "m"})
		e := body.(map[string]any)["error"].(map[string]any)
		if got != status || e["code"] != status || e["type"] == "" || e["message"] != "m" {
			t.Errorf("status %d renders as %d %v", status, got, e)
		}
	}
}
