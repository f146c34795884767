package iceberg

import (
	"net/http"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

type statusType struct {
	status int
	typ    string
}

// byCode is the status and Iceberg error type of every domain code. A
// missing catalog is a missing warehouse; a missing schema or nested
// namespace a missing namespace; a table of another format is not found
// as an Iceberg table.
var byCode = map[fsm.Code]statusType{
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
	fsm.CodeResourceExhausted:     {429, "TooManyRequestsException"},
	fsm.CodeUnsupportedFormat:     {404, "NoSuchTableException"},
	fsm.CodePermissionDenied:      {403, "ForbiddenException"},
	fsm.CodeNotEmpty:              {409, "NamespaceNotEmptyException"},
	fsm.CodeCommitStateUnknown:    {500, "CommitStateUnknownException"},
	fsm.CodeShareNotFound:         {404, "NotFoundException"},
	fsm.CodeShareExists:           {409, "AlreadyExistsException"},
	fsm.CodeRecipientNotFound:     {404, "NotFoundException"},
	fsm.CodeRecipientExists:       {409, "AlreadyExistsException"},
	fsm.CodeActivationUsed:        {400, "BadRequestException"},
	fsm.CodePrincipalNotFound:     {404, "NotFoundException"},
	fsm.CodePrincipalExists:       {409, "AlreadyExistsException"},
	fsm.CodeTokenNotFound:         {404, "NotFoundException"},
}

// typeByStatus is the error type of problems that are not domain errors.
var typeByStatus = map[int]string{
	400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
	404: "NotFoundException", 405: "BadRequestException", 406: "UnsupportedOperationException",
	408: "BadRequestException", 413: "BadRequestException", 415: "BadRequestException",
	422: "UnprocessableEntityException", 429: "TooManyRequestsException", 500: "InternalServerError",
	501: "UnsupportedOperationException", 503: "ServiceUnavailableException",
}

// errorMapping renders Iceberg's envelope:
// {"error": {"message", "type", "code"}} with code the HTTP status.
type errorMapping struct{}

func (errorMapping) Render(p httpapi.Problem) (int, any) {
	st := statusType{p.Status, typeByStatus[p.Status]}
	if p.Code != 0 {
		m, ok := byCode[p.Code]
		if !ok {
			m = statusType{http.StatusInternalServerError, "InternalServerError"}
		}
		st = m
	}
	if st.typ == "" {
		st.typ = fallbackType(st.status)
	}
	return st.status, map[string]any{"error": map[string]any{"message": p.Message, "type": st.typ, "code": st.status}}
}

func fallbackType(status int) string {
	if status >= 400 && status < 500 {
		return "BadRequestException"
	}
	return "InternalServerError"
}
