package ui

import (
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi/httpapitest"
)

// Every domain code has an answer of its own on the status page, and only
// a commit whose state is unknown is a 5xx.
func TestEveryDomainCodeIsMapped(t *testing.T) {
	httpapitest.CheckEveryCodeMapped(t, errorMapping{}, func(c fsm.Code) bool {
		_, ok := statusByCode[c]
		return ok
	})
}
