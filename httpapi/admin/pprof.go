package admin

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"
)

// registerPprof serves Go's runtime profiles, for profiling a node under
// load: go tool pprof http://NODE/debug/pprof/profile?seconds=20
func registerPprof(e *echo.Group) {
	g := e.Group("/debug/pprof")
	g.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.Any("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	g.GET("/*", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
}
