package storage

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{in: "/tmp/x/", want: "file:///tmp/x"},
		{in: "file:/tmp/x", want: "file:///tmp/x"},
		{in: "file:///tmp/x//", want: "file:///tmp/x"},
		{in: "file://localhost/tmp/x", want: "file:///tmp/x"},
		{in: "s3://bucket/a/b/", want: "s3://bucket/a/b"},
		{in: "S3://bucket", want: "s3://bucket"},
		{in: "", err: "empty"},
		{in: "ftp://x/y", err: "unsupported location scheme"},
		{in: "relative/path", err: "unsupported location scheme"},
		{in: "s3:///nobucket", err: "no bucket"},
		{in: "file://host/x", err: "must not name a host"},
		{in: "file:///a/../b/./c", want: "file:///b/c"},
		{in: "s3://bucket/a/../b", err: "'.' or '..' path segment"},
		{in: "s3://bucket/a/%2e%2E/b", err: "'.' or '..' path segment"},
		{in: "gs://bucket/./b", err: "'.' or '..' path segment"},
		{in: "abfss://c@acct.dfs.core.windows.net/x/..", err: "'.' or '..' path segment"},
		{in: "s3://bucket/a..b/.c/..d", want: "s3://bucket/a..b/.c/..d"},
	}
	for _, c := range cases {
		got, err := Normalize(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Normalize(%q) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestRootAndUnder(t *testing.T) {
	if !IsRoot("s3://bucket") || IsRoot("s3://bucket/x") || !IsRoot("file:///") {
		t.Fatal("IsRoot wrong")
	}
	if !IsUnder("file:///a/b/c", "file:///a/b") || IsUnder("file:///a/bc", "file:///a/b") || IsUnder("file:///a/b", "file:///a/b") {
		t.Fatal("IsUnder wrong")
	}
}
