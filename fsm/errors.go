package fsm

import "fmt"

// Code classifies a domain error. HTTP layers map each code to their
// protocol's status and error type through a table; nothing matches on
// message text.
type Code uint8

// Domain error codes. Append only: codes are part of the apply results that
// every protocol maps.
const (
	CodeInvalid               Code = iota + 1 // the request is invalid against current state (400)
	CodeCatalogNotFound                       // 404
	CodeSchemaNotFound                        // 404
	CodeTableNotFound                         // 404
	CodeStagingNotFound                       // 404
	CodeCatalogExists                         // 409 (Delta) / 400 (UC REST)
	CodeSchemaExists                          // 409 / 400
	CodeTableExists                           // 409 / 400
	CodeCommitVersionConflict                 // 409: version taken by another commit
	CodeRequirementConflict                   // 409: assert-table-uuid / assert-etag failed
	CodeResourceExhausted                     // 429: too many unbackfilled commits
	CodeUnsupportedFormat                     // 400: table is not of the protocol's format
	CodePermissionDenied                      // 403
	CodeNotEmpty                              // 400: delete of a non-empty container without force
	CodeCommitStateUnknown                    // 500: outcome cannot be decided yet; retry
	CodeShareNotFound                         // 404: no Delta Sharing share of the name
	CodeShareExists                           // 409 / 400
	CodeRecipientNotFound                     // 404: no recipient of the name (or activation link)
	CodeRecipientExists                       // 409 / 400
	CodeActivationUsed                        // 400: the recipient's profile was already downloaded
	CodePrincipalNotFound                     // 404: no principal of the name
	CodePrincipalExists                       // 409
	CodeTokenNotFound                         // 404: no API token of the id
)

var codeNames = map[Code]string{
	CodeInvalid: "invalid", CodeCatalogNotFound: "catalog-not-found",
	CodeSchemaNotFound: "schema-not-found", CodeTableNotFound: "table-not-found",
	CodeStagingNotFound: "staging-not-found", CodeCatalogExists: "catalog-exists",
	CodeSchemaExists: "schema-exists", CodeTableExists: "table-exists",
	CodeCommitVersionConflict: "commit-version-conflict",
	CodeRequirementConflict:   "requirement-conflict",
	CodeResourceExhausted:     "resource-exhausted", CodeUnsupportedFormat: "unsupported-format",
	CodePermissionDenied: "permission-denied", CodeNotEmpty: "not-empty",
	CodeCommitStateUnknown: "commit-state-unknown",
	CodeShareNotFound:      "share-not-found", CodeShareExists: "share-exists",
	CodeRecipientNotFound: "recipient-not-found", CodeRecipientExists: "recipient-exists",
	CodeActivationUsed:    "activation-used",
	CodePrincipalNotFound: "principal-not-found", CodePrincipalExists: "principal-exists",
	CodeTokenNotFound: "token-not-found",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code(%d)", uint8(c))
}

// Error is a domain error produced while applying (or pre-checking) a
// command. Its message is the user-facing text.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Errf builds an *Error with a formatted message.
func Errf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalidf is shorthand for a CodeInvalid error.
func Invalidf(format string, args ...any) *Error { return Errf(CodeInvalid, format, args...) }

// Codes lists every domain code, in order.
func Codes() []Code {
	var out []Code
	for c := Code(1); codeNames[c] != ""; c++ {
		out = append(out, c)
	}
	return out
}
