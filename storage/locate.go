package storage

import (
	"fmt"
	"net/url"
	"strings"
)

// objectRef is a location split into the bucket that holds it and the
// object key inside that bucket.
type objectRef struct {
	kind   string // file, s3, gs or azblob: the driver
	bucket string // bucket or container ("" for file)
	host   string // azblob: the storage account and its blob domain
	domain string
	root   string // the location up to the key, as the caller spelled it
	key    string
}

// cacheKey names the bucket for the opener's cache.
func (r objectRef) cacheKey() string {
	return r.kind + "://" + r.bucket + "@" + r.host + "." + r.domain
}

// location names key below the same bucket, spelled as the caller did.
func (r objectRef) location(key string) string { return r.root + key }

// Root is the root of the store that holds loc, spelled as loc spells
// it: "file:///" for local files, "s3://bucket/" for a bucket. Object
// keys are relative to it.
func Root(loc string) (string, error) {
	r, err := locate(loc)
	return r.root, err
}

// locate splits an object location: file:///p, s3://bucket/k (s3a://
// alike), gs://bucket/k, abfs[s]://container@account.dfs.<domain>/k.
func locate(loc string) (objectRef, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return objectRef{}, fmt.Errorf("invalid object location %q: %v", loc, err)
	}
	scheme := strings.ToLower(u.Scheme)
	key := strings.TrimLeft(u.Path, "/")
	switch scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return objectRef{}, fmt.Errorf("file location %q must not name a host", loc)
		}
		return objectRef{kind: "file", root: "file:///", key: key}, nil
	case "s3", "s3a", "gs":
		return bucketRef(loc, scheme, u, key)
	case "abfs", "abfss":
		return azureRef(loc, scheme, u, key)
	}
	return objectRef{}, fmt.Errorf("unsupported object location scheme in %q (supported: file, s3, s3a, gs, abfs, abfss)", loc)
}

func bucketRef(loc, scheme string, u *url.URL, key string) (objectRef, error) {
	if u.Host == "" {
		return objectRef{}, fmt.Errorf("object location %q has no bucket", loc)
	}
	kind := scheme
	if kind == "s3a" {
		kind = "s3"
	}
	return objectRef{kind: kind, bucket: u.Host, root: scheme + "://" + u.Host + "/", key: key}, nil
}

// azureRef maps an ADLS Gen2 location onto the account's blob endpoint:
// abfss://c@acct.dfs.core.windows.net/k is container c of
// https://acct.blob.core.windows.net.
func azureRef(loc, scheme string, u *url.URL, key string) (objectRef, error) {
	container := u.User.Username()
	account, domain, ok := strings.Cut(u.Hostname(), ".")
	if container == "" || !ok || account == "" {
		return objectRef{}, fmt.Errorf("azure location %q must be %s://<container>@<account>.dfs.core.windows.net/<path>", loc, scheme)
	}
	domain = "blob." + strings.TrimPrefix(domain, "dfs.")
	root := scheme + "://" + container + "@" + u.Host + "/"
	return objectRef{kind: "azblob", bucket: container, host: account, domain: domain, root: root, key: key}, nil
}
