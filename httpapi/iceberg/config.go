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
// default) must exist; clients then prefix every path with it. A caller
// that authenticated is also told of the OAuth2 token endpoint (its
// clients refresh their tokens there), by its absolute URL too, so that
// they refresh over https when they reached the catalog over it; to
// anonymous callers of a catalog without authentication it means
// nothing, so they are not.
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
	eps, overrides := endpoints(), map[string]string{"prefix": w}
	if _, authenticated := httpapi.IdentityOf(c); authenticated {
		eps = append(eps, http.MethodPost+" "+oauthPath)
		overrides["oauth2-server-uri"] = httpapi.BaseURL(c) + Prefix + oauthPath
	}
	return c.JSON(http.StatusOK, configResponse{Defaults: map[string]string{}, Overrides: overrides, Endpoints: eps})
}
