package ucrest

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// byCode is the status and error_code of every domain code.
var byCode = map[fsm.Code]struct {
	status int
	code   string
}{
	fsm.CodeInvalid:               {400, "INVALID_ARGUMENT"},
	fsm.CodeCatalogNotFound:       {404, "NOT_FOUND"},
	fsm.CodeSchemaNotFound:        {404, "NOT_FOUND"},
	fsm.CodeTableNotFound:         {404, "NOT_FOUND"},
	fsm.CodeStagingNotFound:       {404, "NOT_FOUND"},
	fsm.CodeCatalogExists:         {400, "CATALOG_ALREADY_EXISTS"},
	fsm.CodeSchemaExists:          {400, "SCHEMA_ALREADY_EXISTS"},
	fsm.CodeTableExists:           {400, "TABLE_ALREADY_EXISTS"},
	fsm.CodeCommitVersionConflict: {409, "ABORTED"},
	fsm.CodeRequirementConflict:   {409, "ABORTED"},
	fsm.CodeResourceExhausted:     {429, "RESOURCE_EXHAUSTED"},
	fsm.CodeUnsupportedFormat:     {400, "INVALID_ARGUMENT"},
	fsm.CodePermissionDenied:      {403, "PERMISSION_DENIED"},
	fsm.CodeNotEmpty:              {400, "FAILED_PRECONDITION"},
	fsm.CodeCommitStateUnknown:    {500, "INTERNAL"},
	fsm.CodeShareNotFound:         {404, "NOT_FOUND"},
	fsm.CodeShareExists:           {400, "SHARE_ALREADY_EXISTS"},
	fsm.CodeRecipientNotFound:     {404, "NOT_FOUND"},
	fsm.CodeRecipientExists:       {400, "RECIPIENT_ALREADY_EXISTS"},
	fsm.CodeActivationUsed:        {400, "FAILED_PRECONDITION"},
	fsm.CodePrincipalNotFound:     {404, "NOT_FOUND"},
	fsm.CodePrincipalExists:       {400, "ALREADY_EXISTS"},
	fsm.CodeTokenNotFound:         {404, "NOT_FOUND"},
}

// codeByStatus is the error_code of problems that are not domain errors.
var codeByStatus = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	405: "UNIMPLEMENTED", 409: "ABORTED", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT",
	429: "RESOURCE_EXHAUSTED", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE",
}

// errorMapping renders UC REST's envelope: error_code, message, and one
// google.rpc.ErrorInfo detail whose reason is the error_code; a failed
// operation of a request of several is named in its metadata
// (operation_index, operation).
type errorMapping struct{}

// ucCode reports whether kind is spelled as UC REST's error codes are
// (FAILED_PRECONDITION): another protocol's kind carried through a
// transaction, such as a Lance code number, is not one.
func ucCode(kind string) bool {
	return kind != "" && strings.Trim(kind, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == ""
}

func (errorMapping) Render(p httpapi.Problem) (int, any) {
	status, code := p.Status, codeByStatus[p.Status]
	if ucCode(p.Kind) { // a UC REST error_code the route raised itself
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
		code = "INTERNAL"
	}
	info := map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": code}
	if p.Op != nil {
		info["metadata"] = map[string]string{"operation_index": strconv.Itoa(p.Op.Index), "operation": p.Op.Op}
	}
	return status, map[string]any{"error_code": code, "message": p.Message, "details": []map[string]any{info}}
}

// Errors is UC REST's error envelope, for protocols that serve routes of
// their own below Prefix (Delta Sharing's shares and recipients).
func Errors() httpapi.ErrorMapping { return errorMapping{} }
