package iceberg

import (
	"net/http"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// byCode is the status and error type of every domain code.
var byCode = map[fsm.Code]struct {
	status int
	typ    string
}{
	fsm.CodeInvalid:               {400, "BadRequestException"},
	fsm.CodeCatalogNotFound:       {404, "NoSuchWarehouseException"},
	fsm.CodeSchemaNotFound:        {404, "NoSuchNamespaceException"},
	fsm.CodeTableNotFound:         {404, "NoSuchTableException"},
	fsm.CodeStagingNotFound:       {404, "NoSuchTableException"},
	fsm.CodeCatalogExists:         {409, "AlreadyExistsException"},
	fsm.CodeSchemaExists:          {409, "AlreadyExistsException"},
	fsm.CodeTableExists:           {409, "AlreadyExistsException"},
	fsm.CodeCommitVersionConflict: {409, "CommitFailedException"},
	fsm.CodeRequirementConflict:   {409, "CommitFailedException"},
	fsm.CodeResourceExhausted:     {503, "ServiceUnavailableException"},
	fsm.CodeUnsupportedFormat:     {404, "NoSuchTableException"},
	fsm.CodePermissionDenied:      {403, "ForbiddenException"},
	fsm.CodeNotEmpty:              {409, "NamespaceNotEmptyException"},
	fsm.CodeCommitStateUnknown:    {500, "CommitStateUnknownException"},
}

// typeByStatus is the error type of problems that are not domain errors.
var typeByStatus = map[int]string{
	400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
	404: "NotFoundException", 405: "BadRequestException", 406: "UnsupportedOperationException",
	413: "BadRequestException", 415: "BadRequestException", 503: "ServiceUnavailableException",
}

// errorMapping renders Iceberg's envelope: {"error": {"message", "type",
// "code"}} with code the HTTP status.
type errorMapping struct{}

func (errorMapping) Render(p httpapi.Problem) (int, any) {
	status, typ := p.Status, typeByStatus[p.Status]
	if p.Code != 0 {
		m, ok := byCode[p.Code]
		status, typ = m.status, m.typ
		if !ok {
			status = http.StatusInternalServerError
		}
	}
	if typ == "" {
		typ = "InternalServerError"
	}
	return status, envelope(status, typ, p.Message)
}

func envelope(status int, typ, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}}
}
