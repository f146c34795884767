package lance

import (
	"fmt"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// Lance Namespace error codes (ErrorResponse.code): the client classifies
// errors by them alone.
const (
	codeUnsupported       = 0
	codeNamespaceNotFound = 1
	codeNamespaceExists   = 2
	codeNamespaceNotEmpty = 3
	codeTableNotFound     = 4
	codeTableExists       = 5
	codeVersionNotFound   = 11
	codeInvalidInput      = 13
	codeConcurrentChange  = 14
	codePermissionDenied  = 15
	codeUnauthenticated   = 16
	codeUnavailable       = 17
	codeInternal          = 18
	codeThrottling        = 21
)

// statusOf is the HTTP status of every code this server answers with.
var statusOf = map[int]int{
	codeUnsupported: 406, codeNamespaceNotFound: 404, codeNamespaceExists: 409, codeNamespaceNotEmpty: 409,
	codeTableNotFound: 404, codeTableExists: 409, codeVersionNotFound: 404, codeInvalidInput: 400,
	codeConcurrentChange: 409, codePermissionDenied: 403, codeUnauthenticated: 401, codeUnavailable: 503,
	codeInternal: 500, codeThrottling: 429,
}

// byCode is the Lance code of every domain code.
var byCode = map[fsm.Code]int{
	fsm.CodeInvalid:               codeInvalidInput,
	fsm.CodeCatalogNotFound:       codeNamespaceNotFound,
	fsm.CodeSchemaNotFound:        codeNamespaceNotFound,
	fsm.CodeTableNotFound:         codeTableNotFound,
	fsm.CodeStagingNotFound:       codeTableNotFound,
	fsm.CodeCatalogExists:         codeNamespaceExists,
	fsm.CodeSchemaExists:          codeNamespaceExists,
	fsm.CodeTableExists:           codeTableExists,
	fsm.CodeCommitVersionConflict: codeConcurrentChange,
	fsm.CodeRequirementConflict:   codeConcurrentChange,
	fsm.CodeResourceExhausted:     codeThrottling,
	fsm.CodeUnsupportedFormat:     codeInvalidInput,
	fsm.CodePermissionDenied:      codePermissionDenied,
	fsm.CodeNotEmpty:              codeNamespaceNotEmpty,
	fsm.CodeCommitStateUnknown:    codeUnavailable,
	fsm.CodeShareNotFound:         codeInvalidInput,
	fsm.CodeShareExists:           codeInvalidInput,
	fsm.CodeRecipientNotFound:     codeInvalidInput,
	fsm.CodeRecipientExists:       codeInvalidInput,
	fsm.CodeActivationUsed:        codeInvalidInput,
	fsm.CodePrincipalNotFound:     codeInvalidInput,
	fsm.CodePrincipalExists:       codeInvalidInput,
	fsm.CodeTokenNotFound:         codeInvalidInput,
}

// codeByStatus is the code of problems that are neither domain errors
// nor raised by this package.
var codeByStatus = map[int]int{
	400: codeInvalidInput, 401: codeUnauthenticated, 403: codePermissionDenied, 404: codeTableNotFound,
	405: codeUnsupported, 406: codeUnsupported, 408: codeInvalidInput, 409: codeConcurrentChange,
	413: codeInvalidInput, 415: codeInvalidInput, 429: codeThrottling, 501: codeUnsupported, 503: codeUnavailable,
}

// errorMapping renders Lance's ErrorResponse: {"error", "code"}, with
// "detail" naming the failed operation of a batch.
type errorMapping struct{}

func (errorMapping) Render(p httpapi.Problem) (int, any) {
	status, code := p.Status, classCode(p.Status)
	if p.Kind != "" {
		fmt.Sscan(p.Kind, &code)
	}
	if p.Code != 0 {
		var ok bool
		if code, ok = byCode[p.Code]; !ok {
			code = codeInternal
		}
		status = statusOf[code]
	}
	body := map[string]any{"error": p.Message, "code": code}
	if p.Op != nil {
		body["detail"] = p.Op.Detail()
		body["operation_index"] = p.Op.Index
	}
	return status, body
}

// classCode is the code of a status that is not a domain error's.
func classCode(status int) int {
	if code, ok := codeByStatus[status]; ok {
		return code
	}
	if status >= 400 && status < 500 {
		return codeInvalidInput
	}
	return codeInternal
}

// lanceError is an error with a Lance code of its own.
func lanceError(code int, format string, args ...any) error {
	return &httpapi.KindError{Status: statusOf[code], Kind: fmt.Sprint(code), Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return lanceError(codeInvalidInput, format, args...)
}

func unsupported(format string, args ...any) error {
	return lanceError(codeUnsupported, format, args...)
}
