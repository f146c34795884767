package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// assets are the page's files: index.html, and static/ (its stylesheet,
// script and icon). The page loads nothing from anywhere else.
//
//go:embed assets
var assets embed.FS

// staticFiles are the files served under /ui/static/, by name; index is
// the page itself.
var (
	staticFiles = loadFiles(mustSub(assets, "assets/static"))
	index       = mustRead(assets, "assets/index.html")
)

// file is one embedded file, with a strong ETag: embedded files have no
// modification time to revalidate by.
type file struct {
	data []byte
	etag string
}

// contentPolicy lets the page load its own files and call its own node,
// nothing else.
const contentPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// redirectToIndex answers /ui with the page's address, /ui/, which its
// relative links need.
func redirectToIndex(c echo.Context) error {
	return c.Redirect(http.StatusMovedPermanently, Prefix+"/")
}

func serveIndex(c echo.Context) error {
	pageHeaders(c)
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.HTMLBlob(http.StatusOK, index)
}

// serveStatic answers /ui/static/<name> from the embedded files; a
// browser revalidates them by ETag.
func serveStatic(c echo.Context) error {
	name := c.Param("*")
	f, ok := staticFiles[name]
	if !ok {
		return echo.ErrNotFound
	}
	pageHeaders(c)
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("ETag", f.etag)
	http.ServeContent(c.Response(), c.Request(), name, time.Time{}, bytes.NewReader(f.data))
	return nil
}

// pageHeaders are set on every file of the page.
func pageHeaders(c echo.Context) {
	h := c.Response().Header()
	h.Set(echo.HeaderContentSecurityPolicy, contentPolicy)
	h.Set(echo.HeaderXContentTypeOptions, "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

func mustRead(fsys fs.FS, name string) []byte {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(err)
	}
	return b
}

// loadFiles returns every file of fsys, by path.
func loadFiles(fsys fs.FS) map[string]file {
	out := map[string]file{}
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data := mustRead(fsys, path)
		sum := sha256.Sum256(data)
		out[path] = file{data: data, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
}
