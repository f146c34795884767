// Package iceberg serves the Iceberg REST catalog protocol: the config
// endpoint and, per warehouse (the catalog named by the path's prefix
// segment), views. It translates between the Iceberg wire format and fsm
// commands and state; the httpapi core routes, reads, proposes and
// renders errors with this package's mapping.
package iceberg

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi"
)

// Prefix is the path the Iceberg REST catalog is served under.
const Prefix = "/api/2.1/unity-catalog/iceberg"

// ObjectStore is what the catalog reads and writes of Iceberg metadata
// files, named by full location URL; storage.Blobs is one. Write is
// create-only.
type ObjectStore interface {
	Read(ctx context.Context, loc string) ([]byte, error)
	Write(ctx context.Context, loc string, data []byte) error
	Delete(ctx context.Context, loc string) error
}

// Config configures the Iceberg REST catalog.
type Config struct {
	// Objects holds the metadata files (nil: writes answer 503).
	Objects ObjectStore
}

// Server serves the Iceberg REST catalog on a core.
type Server struct {
	core *httpapi.Server
	cfg  Config
}

// route is one endpoint: what the config endpoint advertises is derived
// from the table, so an endpoint served is an endpoint listed.
type route struct {
	method, path string
	handler      func(s *Server) echo.HandlerFunc
}

// routes are the endpoints below {Prefix}/v1/:prefix.
func routes() []route { return viewRoutes() }

// Register mounts the Iceberg REST catalog on the core. Every request goes
// to the leader (stale reads excepted).
func Register(core *httpapi.Server, cfg Config) *Server {
	s := &Server{core: core, cfg: cfg}
	g := core.Mount(httpapi.Group{Prefix: Prefix, Errors: errorMapping{}, ToLeader: true, Relay: true})
	g.GET("/v1/config", s.config)
	for _, r := range routes() {
		g.Add(r.method, "/v1/:prefix"+r.path, r.handler(s))
	}
	return s
}

// config answers getConfig: the warehouse asked for becomes the prefix,
// and the endpoints are those of the route table.
func (s *Server) config(c echo.Context) error {
	overrides := map[string]string{}
	if w := c.QueryParam("warehouse"); w != "" {
		overrides["prefix"] = w
	}
	return c.JSON(http.StatusOK, map[string]any{"defaults": map[string]string{}, "overrides": overrides,
		"endpoints": endpoints()})
}

// endpoints lists the routes as the spec names them: "GET /v1/{prefix}/...".
func endpoints() []string {
	var out []string
	for _, r := range routes() {
		parts := strings.Split("/v1/:prefix"+r.path, "/")
		for i, p := range parts {
			if name, ok := strings.CutPrefix(p, ":"); ok {
				parts[i] = "{" + name + "}"
			}
		}
		out = append(out, r.method+" "+strings.Join(parts, "/"))
	}
	return out
}
