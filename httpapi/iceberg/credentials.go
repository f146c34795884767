package iceberg

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

func init() {
	addRoutes(
		route{http.MethodGet, tablePath + "/credentials", h((*Server).loadCredentials)},
		route{http.MethodPost, tablePath + "/metrics", h((*Server).reportMetrics)},
	)
}

type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

type credentialsResult struct {
	StorageCredentials []storageCredential `json:"storage-credentials"`
}

// loadCredentials vends what a client uses to read and write the table's
// location itself.
func (s *Server) loadCredentials(c echo.Context) error {
	tb, err := s.readTable(c)
	if err != nil {
		return err
	}
	v := s.cfg.Credentials
	if v == nil {
		v = storage.StaticCredentials{}
	}
	cred, err := v.Vend(c.Request().Context(), tb.Location, "READ_WRITE")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, credentialsResult{StorageCredentials: []storageCredential{
		{Prefix: cred.Prefix, Config: httpapi.NonNil(cred.Config)}}})
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
