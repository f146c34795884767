package storage

import (
	"context"
	"testing"
	"time"
)

func TestStaticCredentialsVendOnlyTheLocationsCloud(t *testing.T) {
	sc := StaticCredentials{S3AccessKeyID: "AK", S3SecretAccessKey: "SK", GCSOAuthToken: "tok", TTL: time.Minute}
	ctx := context.Background()
	before := time.Now().Add(time.Minute).UnixMilli()
	c, err := sc.Vend(ctx, "s3a://b/t", "READ")
	if err != nil || c.Prefix != "s3a://b/t" || c.Operation != "READ" || len(c.Config) != 2 || c.Config["s3.access-key-id"] != "AK" {
		t.Fatalf("s3a: %+v %v", c, err)
	}
	if c.ExpiresAtMs == nil || *c.ExpiresAtMs < before || *c.ExpiresAtMs > time.Now().Add(time.Minute).UnixMilli() {
		t.Fatalf("expiry %v, want now+TTL", c.ExpiresAtMs)
	}
	if c, _ := sc.Vend(ctx, "gs://b/t", "READ_WRITE"); len(c.Config) != 1 || c.Config["gcs.oauth-token"] != "tok" {
		t.Fatalf("gs: %+v", c)
	}
	for _, loc := range []string{"abfss://c@a.dfs.core.windows.net/t", "file:///tmp/t"} {
		if c, _ := sc.Vend(ctx, loc, "READ"); c.Config == nil || len(c.Config) != 0 || c.ExpiresAtMs != nil {
			t.Fatalf("%s: %+v, want an empty config and no expiry", loc, c)
		}
	}
}

// READ vends the read-only keys when there are some, READ_WRITE never does.
func TestReadOnlyKeysAreVendedForRead(t *testing.T) {
	ro := &StaticCredentials{S3AccessKeyID: "RO", S3SecretAccessKey: "ROS"}
	sc := StaticCredentials{S3AccessKeyID: "RW", S3SecretAccessKey: "RWS", ReadOnly: ro}
	for op, want := range map[string]string{OperationRead: "RO", OperationReadWrite: "RW"} {
		c, err := sc.Vend(context.Background(), "s3://b/t", op)
		if err != nil || c.Config["s3.access-key-id"] != want || c.Operation != op {
			t.Fatalf("%s vended %+v, %v; want key %s", op, c, err, want)
		}
	}
	sc.ReadOnly = nil
	if c, _ := sc.Vend(context.Background(), "s3://b/t", OperationRead); c.Config["s3.access-key-id"] != "RW" {
		t.Fatalf("without read-only keys READ vended %+v", c)
	}
}
