package storage

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"
)

// ObjectStore is everything the catalog itself reads or writes in table
// storage. Objects are named by their full location URL
// (s3://bucket/table/_delta_log/00000000000000000001.json); see Blobs for
// the schemes served.
type ObjectStore interface {
	// Stat describes one object (ErrNotFound if there is none).
	Stat(ctx context.Context, loc string) (ObjectInfo, error)
	// Read returns an object's bytes.
	Read(ctx context.Context, loc string) ([]byte, error)
	// ReadRange returns n bytes from offset off (n < 0: to the end).
	ReadRange(ctx context.Context, loc string, off, n int64) ([]byte, error)
	// List returns every object whose location starts with prefix, in
	// lexical order. End the prefix with "/" to list a directory.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Write creates an object; an object already there is left as it is
	// and the answer is ErrExists.
	Write(ctx context.Context, loc string, data []byte) error
	// Delete removes an object (ErrNotFound if there is none).
	Delete(ctx context.Context, loc string) error
	// SignedURL returns a URL that GETs the object without credentials
	// until expiry passes (ErrSigningUnsupported where the scheme cannot).
	SignedURL(ctx context.Context, loc string, expiry time.Duration) (string, error)
}

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Location string
	Size     int64
	ModTime  time.Time
	// ETag is the store's entity tag of the object, as Stat reports it
	// (empty where the store has none, and in listings).
	ETag string
}

// Errors an ObjectStore answers with (test with errors.Is).
var (
	ErrNotFound           = errors.New("object not found")
	ErrExists             = errors.New("object already exists")
	ErrSigningUnsupported = errors.New("signed URLs are not available for this location")
)

// Join names the object rel (slash-separated) below location loc.
func Join(loc, rel string) string {
	return strings.TrimRight(loc, "/") + "/" + strings.TrimLeft(rel, "/")
}

// ObjectReader is the part of an ObjectStore that reads whole objects.
type ObjectReader interface {
	Read(ctx context.Context, loc string) ([]byte, error)
}

// SameContent reports whether objects a and b hold the same bytes; either
// one missing or unreadable is an error.
func SameContent(ctx context.Context, r ObjectReader, a, b string) (bool, error) {
	x, err := r.Read(ctx, a)
	if err != nil {
		return false, err
	}
	y, err := r.Read(ctx, b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(x, y), nil
}
