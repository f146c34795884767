package admin

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi"
)

// registerPprof serves Go's runtime profiles, for profiling a node under
// load: go tool pprof http://NODE/debug/pprof/profile?seconds=20
func registerPprof(e *httpapi.Routes) {
	g, admin := e.Group("/debug/pprof"), httpapi.AdminOnly()
	g.GET("/cmdline", admin, echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/profile", admin, echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.Any("/symbol", admin, echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/trace", admin, echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	g.GET("/*", admin, echo.WrapHandler(http.HandlerFunc(pprof.Index)))
}
