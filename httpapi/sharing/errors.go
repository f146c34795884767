package sharing

import (
	"fmt"
	"net/http"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// Delta Sharing error codes (the reference server's errorCode values).
const (
	codeInvalid     = "INVALID_PARAMETER_VALUE"
	codeMalformed   = "MALFORMED_REQUEST"
	codeUnsupported = "UNSUPPORTED_OPERATION"
	codeNotFound    = "RESOURCE_DOES_NOT_EXIST"
	codeInternal    = "INTERNAL_ERROR"
	// codeFailedPrecondition: the table's state in storage keeps the
	// request from being answered (its Delta log cannot be read).
	codeFailedPrecondition = "FAILED_PRECONDITION"
	codeUnavailable        = "TEMPORARILY_UNAVAILABLE"
)

type statusCode struct {
	status int
	code   string
}

// byCode is the status and errorCode of every domain code.
var byCode = map[fsm.Code]statusCode{
	fsm.CodeInvalid:               {400, codeInvalid},
	fsm.CodeCatalogNotFound:       {404, codeNotFound},
	fsm.CodeSchemaNotFound:        {404, codeNotFound},
	fsm.CodeTableNotFound:         {404, codeNotFound},
	fsm.CodeStagingNotFound:       {404, codeNotFound},
	fsm.CodeCatalogExists:         {409, "RESOURCE_ALREADY_EXISTS"},
	fsm.CodeSchemaExists:          {409, "RESOURCE_ALREADY_EXISTS"},
	fsm.CodeTableExists:           {409, "RESOURCE_ALREADY_EXISTS"},
	fsm.CodeCommitVersionConflict: {409, "ABORTED"},
	fsm.CodeRequirementConflict:   {409, "ABORTED"},
	fsm.CodeResourceExhausted:     {429, "RESOURCE_EXHAUSTED"},
	fsm.CodeUnsupportedFormat:     {400, codeUnsupported},
	fsm.CodePermissionDenied:      {403, "PERMISSION_DENIED"},
	fsm.CodeNotEmpty:              {400, codeInvalid},
	fsm.CodeCommitStateUnknown:    {500, codeInternal},
	fsm.CodeShareNotFound:         {404, codeNotFound},
	fsm.CodeShareExists:           {409, "RESOURCE_ALREADY_EXISTS"},
	fsm.CodeRecipientNotFound:     {404, codeNotFound},
	fsm.CodeRecipientExists:       {409, "RESOURCE_ALREADY_EXISTS"},
	fsm.CodeActivationUsed:        {400, codeInvalid},
	fsm.CodePrincipalNotFound:     {404, codeNotFound},
	fsm.CodePrincipalExists:       {409, "RESOURCE_ALREADY_EXISTS"},
	fsm.CodeTokenNotFound:         {404, codeNotFound},
}

// codeByStatus is the errorCode of problems that are not domain errors.
var codeByStatus = map[int]string{
	400: codeInvalid, 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: codeNotFound,
	405: codeNotFound, 408: codeMalformed, 413: codeMalformed, 415: codeMalformed,
	429: "RESOURCE_EXHAUSTED", 501: codeUnsupported, 503: "TEMPORARILY_UNAVAILABLE",
}

// errorMapping renders Delta Sharing's envelope: {"errorCode","message"}.
type errorMapping struct{}

func (errorMapping) Render(p httpapi.Problem) (int, any) {
	status, code := p.Status, codeByStatus[p.Status]
	if p.Kind != "" {
		code = p.Kind
	}
	if p.Code != 0 {
		m, ok := byCode[p.Code]
		status, code = m.status, m.code
		if !ok {
			status = http.StatusInternalServerError
		}
	}
	if code == "" {
		code = codeInternal
	}
	return status, map[string]string{"errorCode": code, "message": p.Message}
}

// Errors the protocol raises itself.

func invalid(format string, args ...any) error {
	return &httpapi.KindError{Status: 400, Kind: codeInvalid, Message: fmt.Sprintf(format, args...)}
}

func malformed(format string, args ...any) error {
	return &httpapi.KindError{Status: 400, Kind: codeMalformed, Message: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) error {
	return &httpapi.KindError{Status: 400, Kind: codeUnsupported, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpapi.KindError{Status: 404, Kind: codeNotFound, Message: fmt.Sprintf(format, args...)}
}

func unauthenticated(msg string) error {
	return &httpapi.KindError{Status: 401, Kind: "UNAUTHENTICATED", Message: msg}
}

func forbidden(msg string) error {
	return &httpapi.KindError{Status: 403, Kind: "PERMISSION_DENIED", Message: msg}
}
