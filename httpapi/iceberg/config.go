package iceberg

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi"
)

// defaultWarehouse is the catalog config answers for when the client names
// no warehouse.
const defaultWarehouse = "unity"

type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

// getConfig answers GET /v1/config?warehouse=W: the catalog W (unity by
// default) must exist; clients then prefix every path with it.
func (s *Server) getConfig(c echo.Context) error {
	w := c.QueryParam("warehouse")
	if w == "" {
		w = defaultWarehouse
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	if _, err := httpapi.LookupCatalog(st, w); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, configResponse{Defaults: map[string]string{},
		Overrides: map[string]string{"prefix": w}, Endpoints: endpoints()})
}
