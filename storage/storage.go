// Package storage is raftcat's side of table storage: it normalises the
// table locations the catalog hands out, reaches the objects the catalog
// itself must look at through one ObjectStore (published and staged Delta
// commits when deciding whether a commit for a purged version is a
// replay), and vends the credentials clients get for a location.
package storage

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Schemes raftcat accepts for table and managed-storage locations.
var knownSchemes = map[string]bool{"file": true, "s3": true, "s3a": true, "gs": true, "abfs": true, "abfss": true}

// Normalize returns the canonical form of a location: trailing slashes
// removed, and local paths (`/x`, `file:/x`, `file:///x`) as `file:///x`,
// with `.` and `..` resolved. Unknown schemes and relative paths are
// rejected, and so are `.` and `..` segments on every other scheme
// (spelled plainly or percent-encoded): an object store would keep them
// in the key while a client that resolves them reaches another place, so
// checks on the location's text (overlaps) would not hold.
func Normalize(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", errors.New("location is empty")
	}
	if strings.HasPrefix(s, "/") {
		s = "file://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("invalid location %q: %v", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if !knownSchemes[scheme] {
		return "", fmt.Errorf("unsupported location scheme in %q (supported: file, s3, s3a, gs, abfs, abfss)", raw)
	}
	if scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("file location %q must not name a host", raw)
		}
		p := path.Clean("/" + strings.TrimLeft(u.Path, "/"))
		if p == "/" {
			return "file:///", nil
		}
		return "file://" + p, nil
	}
	if u.Host == "" {
		return "", fmt.Errorf("location %q has no bucket or container", raw)
	}
	if hasDotSegment(u.Path) {
		return "", fmt.Errorf("location %q has a '.' or '..' path segment: an object store takes it as part of a key, a client may resolve it to another place", raw)
	}
	return scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// hasDotSegment reports whether a decoded URL path has a "." or ".."
// segment (percent-encoded dots count: the path is decoded).
func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// IsRoot reports whether a normalised location has no path below its
// bucket (or is the local filesystem root).
func IsRoot(loc string) bool {
	u, err := url.Parse(loc)
	if err != nil {
		return false
	}
	return strings.Trim(u.Path, "/") == ""
}

// IsUnder reports whether child is strictly below parent (both normalised).
func IsUnder(child, parent string) bool {
	return strings.HasPrefix(child, strings.TrimRight(parent, "/")+"/")
}

// LocalPath returns the filesystem path of a file:// location.
func LocalPath(loc string) (string, error) {
	p, ok := strings.CutPrefix(loc, "file://")
	if !ok {
		return "", fmt.Errorf("location %s is not on the local filesystem", loc)
	}
	return filepath.FromSlash(p), nil
}
