package iceberg

import (
	"maps"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

func init() {
	addRoutes(
		route{http.MethodGet, tablePath + "/credentials", selectTable, h((*Server).loadCredentials)},
		route{http.MethodPost, tablePath + "/metrics", selectTable, h((*Server).reportMetrics)},
	)
}

// Operations a vended credential allows.
const (
	opRead      = "READ"
	opReadWrite = "READ_WRITE"
)

// headerDelegation is how a client asks a load, create or commit to
// carry the credentials of the table's location (vended-credentials) or
// to sign its requests (remote-signing, which this catalog does not do).
const headerDelegation = "X-Iceberg-Access-Delegation"

type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

type credentialsResult struct {
	StorageCredentials []storageCredential `json:"storage-credentials"`
}

// loadCredentials vends what a client uses to reach the table's location
// itself: to read and write it with MODIFY on the table, else to read.
func (s *Server) loadCredentials(c echo.Context) error {
	tb, err := s.readTable(c)
	if err != nil {
		return err
	}
	cred, err := s.vend(c, tb.Location, s.operation(c, tb))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, credentialsResult{StorageCredentials: []storageCredential{cred}})
}

// vend is the credential for op on loc.
func (s *Server) vend(c echo.Context, loc, op string) (storageCredential, error) {
	v := s.cfg.Credentials
	if v == nil {
		v = storage.StaticCredentials{}
	}
	cred, err := v.Vend(c.Request().Context(), loc, op)
	if err != nil {
		return storageCredential{}, err
	}
	return storageCredential{Prefix: cred.Prefix, Config: httpapi.NonNil(cred.Config)}, nil
}

// operation is what the caller may do in tb's location: READ_WRITE with
// MODIFY on the table, else READ (the route needed SELECT). It is decided
// on the state this node has applied, which holds the write a create or
// commit answer follows.
func (s *Server) operation(c echo.Context, tb *fsm.Table) string {
	st, _ := s.core.Node().StaleState()
	if s.core.Allowed(c, st, access.OnTable(fsm.PrivModify, append(tb.NamespacePath(), tb.Name)...)) {
		return opReadWrite
	}
	return opRead
}

// wantsCredentials reports whether the request asks for vended
// credentials (the header lists delegation modes, comma separated).
func wantsCredentials(c echo.Context) bool {
	for _, v := range c.Request().Header.Values(headerDelegation) {
		for _, mode := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(mode), "vended-credentials") {
				return true
			}
		}
	}
	return false
}

// delegate vends, when the request asks for it, the credential for op on
// loc: its keys are merged into config (where clients such as pyiceberg
// read them) and it is returned for the answer's storage-credentials.
// Nothing is vended otherwise.
func (s *Server) delegate(c echo.Context, loc, op string, config map[string]string) ([]storageCredential, error) {
	if !wantsCredentials(c) {
		return nil, nil
	}
	cred, err := s.vend(c, loc, op)
	if err != nil {
		return nil, err
	}
	maps.Copy(config, cred.Config)
	return []storageCredential{cred}, nil
}

// reportMetrics accepts a metrics report for an existing table: 204.
// Reports are not kept.
func (s *Server) reportMetrics(c echo.Context) error {
	var report map[string]any
	found, err := httpapi.BindJSON(c, &report)
	if err != nil {
		return err
	}
	if !found {
		return httpapi.Invalid("A metrics report is required")
	}
	if _, err := s.readTable(c); err != nil {
		return err
	}
	return noContent(c)
}
