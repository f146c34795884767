package deltaapi

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
	fsm.CodeInvalid:               {400, "InvalidParameterValueException"},
	fsm.CodeCatalogNotFound:       {404, "NoSuchCatalogException"},
	fsm.CodeSchemaNotFound:        {404, "NoSuchSchemaException"},
	fsm.CodeTableNotFound:         {404, "NoSuchTableException"},
	fsm.CodeStagingNotFound:       {404, "NoSuchTableException"},
	fsm.CodeCatalogExists:         {409, "AlreadyExistsException"},
	fsm.CodeSchemaExists:          {409, "AlreadyExistsException"},
	fsm.CodeTableExists:           {409, "AlreadyExistsException"},
	fsm.CodeCommitVersionConflict: {409, "CommitVersionConflictException"},
	fsm.CodeRequirementConflict:   {409, "UpdateRequirementConflictException"},
	fsm.CodeResourceExhausted:     {429, "ResourceExhaustedException"},
	fsm.CodeUnsupportedFormat:     {400, "UnsupportedTableFormatException"},
	fsm.CodePermissionDenied:      {403, "PermissionDeniedException"},
	fsm.CodeNotEmpty:              {400, "InvalidParameterValueException"},
	fsm.CodeCommitStateUnknown:    {500, "CommitStateUnknownException"},
	fsm.CodeShareNotFound:         {404, "NotFoundException"},
	fsm.CodeShareExists:           {409, "AlreadyExistsException"},
	fsm.CodeRecipientNotFound:     {404, "NotFoundException"},
	fsm.CodeRecipientExists:       {409, "AlreadyExistsException"},
	fsm.CodeActivationUsed:        {400, "InvalidParameterValueException"},
	fsm.CodePrincipalNotFound:     {404, "NotFoundException"},
	fsm.CodePrincipalExists:       {409, "AlreadyExistsException"},
	fsm.CodeTokenNotFound:         {404, "NotFoundException"},
}

// typeByStatus is the error type of problems that are not domain errors.
var typeByStatus = map[int]string{
	400: "InvalidParameterValueException", 401: "NotAuthorizedException", 403: "PermissionDeniedException",
	404: "NotFoundException", 405: "InvalidParameterValueException", 413: "InvalidParameterValueException",
	415: "InvalidParameterValueException", 429: "TooManyRequestsException", 501: "NotImplementedException",
	503: "ServiceUnavailableException",
}

// errorMapping renders the Delta API's envelope:
// {"error": {"message", "type", "code"}} with code the HTTP status.
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
		typ = "InternalServerErrorException"
	}
	return status, map[string]any{"error": map[string]any{"message": p.Message, "type": typ, "code": status}}
}
