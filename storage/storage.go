// Package storage knows the table locations raftcat hands out: it
// normalises location URLs, and reads the few files the catalog itself
// must look at (published and staged Delta commits when deciding whether a
// commit for a purged version is a replay).
package storage

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Schemes raftcat accepts for table and managed-storage locations.
var knownSchemes = map[string]bool{"file": true, "s3": true, "s3a": true, "gs": true, "abfs": true, "abfss": true}

// Normalize returns the canonical form of a location: trailing slashes
// removed, and local paths (`/x`, `file:/x`, `file:///x`) as `file:///x`.
// Unknown schemes and relative paths are rejected.
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
	return scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
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

// ErrUnreadable means a file the catalog had to compare could not be read.
var ErrUnreadable = errors.New("storage file unreadable")

// SameFile reports whether two files below a table location hold the same
// bytes. Either file missing, being a directory, or storage the catalog
// cannot read is ErrUnreadable.
func SameFile(loc, relA, relB string) (bool, error) {
	a, err := readFile(loc, relA)
	if err != nil {
		return false, err
	}
	b, err := readFile(loc, relB)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

func readFile(loc, rel string) ([]byte, error) {
	root, err := LocalPath(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	return b, nil
}
