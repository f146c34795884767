package admin

import (
	"net/http"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// statusByCode is the status of every domain code (the admin endpoints
// only meet CodeInvalid, from binding).
var statusByCode = map[fsm.Code]int{
	fsm.CodeInvalid:               400,
	fsm.CodeCatalogNotFound:       404,
	fsm.CodeSchemaNotFound:        404,
	fsm.CodeTableNotFound:         404,
	fsm.CodeStagingNotFound:       404,
	fsm.CodeCatalogExists:         409,
	fsm.CodeSchemaExists:          409,
	fsm.CodeTableExists:           409,
	fsm.CodeCommitVersionConflict: 409,
	fsm.CodeRequirementConflict:   409,
	fsm.CodeResourceExhausted:     429,
	fsm.CodeUnsupportedFormat:     400,
	fsm.CodePermissionDenied:      403,
	fsm.CodeNotEmpty:              400,
	fsm.CodeCommitStateUnknown:    500,
	fsm.CodeShareNotFound:         404,
	fsm.CodeShareExists:           409,
	fsm.CodeRecipientNotFound:     404,
	fsm.CodeRecipientExists:       409,
	fsm.CodeActivationUsed:        400,
	fsm.CodePrincipalNotFound:     404,
	fsm.CodePrincipalExists:       409,
	fsm.CodeTokenNotFound:         404,
}

// errorMapping renders {"error": message, "code": status}.
type errorMapping struct{}

func (errorMapping) Render(p httpapi.Problem) (int, any) {
	status := p.Status
	if p.Code != 0 {
		status = statusByCode[p.Code]
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	return status, map[string]any{"error": p.Message, "code": status}
}

// Errors is the admin endpoints' error mapping, for other operational
// pages that answer alike.
func Errors() httpapi.ErrorMapping { return errorMapping{} }
