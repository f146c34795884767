package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// The audit log: one JSON line per write and per refused request (401,
// 403, 429), written by the node the client reached, so each request is
// recorded once whichever node served it. A line names the caller, never
// a credential: the route template stands for the path, and parameters
// that are secrets themselves (an activation code, a file URL's token)
// are left out.

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time      string `json:"time"`
	Principal string `json:"principal"`
	Client    string `json:"client"`
	Protocol  string `json:"protocol"`
	Action    string `json:"action"`
	Securable string `json:"securable,omitempty"`
	Result    string `json:"result"`
	Status    int    `json:"status"`
	RaftIndex uint64 `json:"raft_index,omitempty"`
	RequestID string `json:"request_id"`
}

type auditLog struct {
	mu sync.Mutex
	w  io.Writer
}

func newAuditLog(w io.Writer) *auditLog {
	if w == nil {
		return nil
	}
	return &auditLog{w: w}
}

func (a *auditLog) write(r AuditRecord) {
	line, _ := json.Marshal(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(line, '\n'))
}

// secretParams are route parameters never written to the audit log.
var secretParams = map[string]bool{"code": true, "token": true}

// auditRequests records the requests the audit log keeps.
func (s *Server) auditRequests(next echo.HandlerFunc) echo.HandlerFunc {
	if s.audit == nil {
		return next
	}
	return func(c echo.Context) error {
		if err := next(c); err != nil {
			c.Error(err)
		}
		if r := c.Request(); !s.fromPeer(r) && audited(r.Method, c.Response().Status) {
			s.audit.write(s.auditRecord(c))
		}
		return nil
	}
}

func audited(method string, status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
		return true
	}
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

func (s *Server) auditRecord(c echo.Context) AuditRecord {
	r, status := c.Request(), c.Response().Status
	rec := AuditRecord{Time: time.Now().UTC().Format(time.RFC3339Nano), Principal: Caller(c), Client: ClientAddr(c),
		Action: r.Method + " " + c.Path(), Securable: securableOf(c), Status: status,
		RequestID: r.Header.Get(HeaderRequestID), Result: "ok"}
	if g, ok := s.groupOf(r.URL.Path); ok {
		rec.Protocol = g.Name
	}
	if c.Path() == "" {
		rec.Action = r.Method + " unmatched"
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests:
		rec.Result = "denied"
	case status >= 400:
		rec.Result = "error"
	}
	rec.RaftIndex, _ = strconv.ParseUint(c.Response().Header().Get(HeaderIndex), 10, 64)
	return rec
}

// securableOf names what the request's route parameters name.
func securableOf(c echo.Context) string {
	var parts []string
	for i, n := range c.ParamNames() {
		if !secretParams[n] && i < len(c.ParamValues()) {
			parts = append(parts, c.ParamValues()[i])
		}
	}
	return strings.Join(parts, ".")
}
