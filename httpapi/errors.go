package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/fsm"
)

// protocol is an API family with its own error envelope.
type protocol int

const (
	protoAdmin protocol = iota
	protoUC
	protoDelta
)

const (
	ucPrefix    = "/api/2.1/unity-catalog"
	deltaPrefix = ucPrefix + "/delta/v1"
)

func protocolOf(path string) protocol {
	switch {
	case strings.HasPrefix(path, deltaPrefix+"/") || path == deltaPrefix:
		return protoDelta
	case strings.HasPrefix(path, ucPrefix+"/") || path == ucPrefix:
		return protoUC
	}
	return protoAdmin
}

// problem is an error resolved to what every protocol needs to render it.
type problem struct {
	status     int
	code       fsm.Code // 0 when the problem is not a domain error
	message    string
	retryAfter bool
}

// classify turns any handler error into a problem. Domain errors carry
// their code; replication errors become 503s that invite a retry.
func classify(err error) problem {
	var de *fsm.Error
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &de):
		return problem{status: deltaStatus[de.Code].status, code: de.Code, message: de.Message}
	case errors.As(err, &mbe):
		return problem{status: http.StatusRequestEntityTooLarge, message: "request body too large"}
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		return problem{status: he.Code, message: msg}
	case errors.Is(err, cluster.ErrBadSnapshot), errors.Is(err, cluster.ErrLastVoter):
		return problem{status: http.StatusBadRequest, message: err.Error()}
	case errors.Is(err, cluster.ErrUnknownServer):
		return problem{status: http.StatusNotFound, message: err.Error()}
	case errors.Is(err, cluster.ErrUnknownOutcome):
		return problem{status: http.StatusServiceUnavailable, retryAfter: true,
			message: "The outcome of the request is unknown (leadership changed while it was being replicated); retry the identical request."}
	case errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrShutdown),
		errors.Is(err, errLeaderUnreachable):
		return problem{status: http.StatusServiceUnavailable, retryAfter: true,
			message: "The catalog cluster has no reachable leader right now; retry the request. (" + err.Error() + ")"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return problem{status: http.StatusServiceUnavailable, retryAfter: true, message: "Request timed out: " + err.Error()}
	}
	return problem{status: http.StatusInternalServerError, message: "Internal error: " + err.Error()}
}

// Delta API: status and error type per domain code.
var deltaStatus = map[fsm.Code]struct {
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
}

// Delta API: error type for problems that are not domain errors.
var deltaTypeByStatus = map[int]string{
	400: "InvalidParameterValueException", 401: "NotAuthorizedException", 403: "PermissionDeniedException",
	404: "NotFoundException", 405: "InvalidParameterValueException", 413: "InvalidParameterValueException",
	415: "InvalidParameterValueException", 429: "TooManyRequestsException", 501: "NotImplementedException",
	503: "ServiceUnavailableException",
}

// UC REST: status and error_code per domain code.
var ucStatus = map[fsm.Code]struct {
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
}

var ucCodeByStatus = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	405: "UNIMPLEMENTED", 409: "ABORTED", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT",
	429: "RESOURCE_EXHAUSTED", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE",
}

// handleError is Echo's single error handler: it renders every error in
// the envelope of the protocol the request belongs to.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p := classify(err)
	if p.status >= 500 && p.status != http.StatusServiceUnavailable {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if p.retryAfter {
		c.Response().Header().Set("Retry-After", "1")
	}
	proto := protocolOf(c.Request().URL.Path)
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(statusFor(proto, p))
		return
	}
	var body any
	status := statusFor(proto, p)
	switch proto {
	case protoDelta:
		typ := deltaTypeByStatus[status]
		if p.code != 0 {
			typ = deltaStatus[p.code].typ
		}
		if typ == "" {
			typ = "InternalServerErrorException"
		}
		body = map[string]any{"error": map[string]any{"message": p.message, "type": typ, "code": status}}
	case protoUC:
		code := ucCodeByStatus[status]
		if p.code != 0 {
			code = ucStatus[p.code].code
		}
		if code == "" {
			code = "INTERNAL"
		}
		body = map[string]any{"error_code": code, "message": p.message,
			"details": []map[string]string{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": code}}}
	default:
		body = map[string]any{"error": p.message, "code": status}
	}
	_ = c.JSON(status, body)
}

func statusFor(proto protocol, p problem) int {
	if proto == protoUC && p.code != 0 {
		return ucStatus[p.code].status
	}
	return p.status
}

// invalid is a 400 in every protocol.
func invalid(format string, args ...any) error { return fsm.Invalidf(format, args...) }

// errf503 is a temporary unavailability.
func errf503(msg string) error {
	return echo.NewHTTPError(http.StatusServiceUnavailable, msg)
}
