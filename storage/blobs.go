package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Blobs is the ObjectStore over gocloud.dev/blob: fileblob for file://,
// s3blob for s3:// and s3a://, gcsblob for gs://, azureblob for abfs://
// and abfss://. Each bucket is opened once, on first use, with the cloud
// SDK's standard credential chain, and kept until Close.
type Blobs struct {
	opts BlobOptions

	mu      sync.Mutex
	buckets map[string]*blob.Bucket
}

// NewBlobs returns an ObjectStore; it opens nothing yet.
func NewBlobs(opts BlobOptions) *Blobs {
	return &Blobs{opts: opts, buckets: map[string]*blob.Bucket{}}
}

var _ ObjectStore = (*Blobs)(nil)

// Close closes every bucket opened so far.
func (b *Blobs) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for k, bk := range b.buckets {
		errs = append(errs, bk.Close())
		delete(b.buckets, k)
	}
	return errors.Join(errs...)
}

// open returns the bucket holding loc, and loc's key in it.
func (b *Blobs) open(ctx context.Context, loc string) (*blob.Bucket, objectRef, error) {
	ref, err := locate(loc)
	if err != nil {
		return nil, ref, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk, ok := b.buckets[ref.cacheKey()]; ok {
		return bk, ref, nil
	}
	bk, err := b.opts.openBucket(context.WithoutCancel(ctx), ref)
	if err != nil {
		return nil, ref, fmt.Errorf("open bucket for %s: %w", loc, err)
	}
	b.buckets[ref.cacheKey()] = bk
	return bk, ref, nil
}

// Stat implements ObjectStore.
func (b *Blobs) Stat(ctx context.Context, loc string) (ObjectInfo, error) {
	bk, ref, err := b.open(ctx, loc)
	if err != nil {
		return ObjectInfo{}, err
	}
	a, err := bk.Attributes(ctx, ref.key)
	if err != nil {
		return ObjectInfo{}, wrapErr("stat", loc, err)
	}
	return ObjectInfo{Location: loc, Size: a.Size, ModTime: a.ModTime, ETag: a.ETag}, nil
}

// Read implements ObjectStore.
func (b *Blobs) Read(ctx context.Context, loc string) ([]byte, error) {
	return b.ReadRange(ctx, loc, 0, -1)
}

// ReadRange implements ObjectStore.
func (b *Blobs) ReadRange(ctx context.Context, loc string, off, n int64) ([]byte, error) {
	bk, ref, err := b.open(ctx, loc)
	if err != nil {
		return nil, err
	}
	r, err := bk.NewRangeReader(ctx, ref.key, off, n, nil)
	if err != nil {
		return nil, wrapErr("read", loc, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, wrapErr("read", loc, err)
	}
	return data, nil
}

// List implements ObjectStore.
func (b *Blobs) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	bk, ref, err := b.open(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []ObjectInfo
	it := bk.List(&blob.ListOptions{Prefix: ref.key})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, wrapErr("list", prefix, err)
		}
		if !obj.IsDir {
			out = append(out, ObjectInfo{Location: ref.location(obj.Key), Size: obj.Size, ModTime: obj.ModTime})
		}
	}
}

// Write implements ObjectStore: a conditional create (If-None-Match: *
// on S3; on file:// a hard link that fails if the name exists, see
// writeLocalExclusive).
func (b *Blobs) Write(ctx context.Context, loc string, data []byte) error {
	if ref, err := locate(loc); err == nil && ref.kind == "file" {
		if err := writeLocalExclusive("/"+ref.key, data); err != nil {
			return fmt.Errorf("write %s: %w", loc, err)
		}
		return nil
	}
	bk, ref, err := b.open(ctx, loc)
	if err != nil {
		return err
	}
	err = bk.WriteAll(ctx, ref.key, data, &blob.WriterOptions{IfNotExist: true, ContentType: "application/octet-stream"})
	if code := gcerrors.Code(err); code == gcerrors.FailedPrecondition || code == gcerrors.AlreadyExists {
		return fmt.Errorf("write %s: %w", loc, ErrExists)
	}
	if err != nil {
		return wrapErr("write", loc, err)
	}
	return nil
}

// Delete implements ObjectStore.
func (b *Blobs) Delete(ctx context.Context, loc string) error {
	bk, ref, err := b.open(ctx, loc)
	if err != nil {
		return err
	}
	return wrapErr("delete", loc, bk.Delete(ctx, ref.key))
}

// SignedURL implements ObjectStore. file:// locations have no signer
// (there is no server to hand such a URL to): ErrSigningUnsupported.
func (b *Blobs) SignedURL(ctx context.Context, loc string, expiry time.Duration) (string, error) {
	bk, ref, err := b.open(ctx, loc)
	if err != nil {
		return "", err
	}
	u, err := bk.SignedURL(ctx, ref.key, &blob.SignedURLOptions{Expiry: expiry, Method: http.MethodGet})
	if gcerrors.Code(err) == gcerrors.Unimplemented {
		return "", fmt.Errorf("sign %s: %w", loc, ErrSigningUnsupported)
	}
	if err != nil {
		return "", wrapErr("sign", loc, err)
	}
	return u, nil
}

// wrapErr names the operation and location, and makes a missing object
// ErrNotFound.
func wrapErr(op, loc string, err error) error {
	if err == nil {
		return nil
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%s %s: %w (%v)", op, loc, ErrNotFound, err)
	}
	return fmt.Errorf("%s %s: %w", op, loc, err)
}
