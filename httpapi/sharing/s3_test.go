package sharing_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/raftcat/raftcat/internal/s3test"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// upload puts a golden table into a bucket of a real S3-compatible server.
func upload(t *testing.T, srv *s3test.Server, bucket, prefix, table string) string {
	t.Helper()
	src := filepath.Join(goldenDir(t), table)
	cl := srv.Client()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
			Key: aws.String(prefix + "/" + filepath.ToSlash(rel)), Body: f})
		return err
	})
	if err != nil {
		t.Fatalf("upload %s: %v", table, err)
	}
	return "s3://" + bucket + "/" + prefix
}

// Tables in S3 are shared with URLs the storage signs: a client with no
// credentials reads the files straight from the bucket.
func TestSharingFromS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.Setenv(t)
	srv.CreateBucket(t, "lake")
	nodes := testcluster.Start(t, 3, testcluster.Options{Objects: storage.BlobOptions{S3Endpoint: srv.Endpoint, S3PathStyle: true}})
	testcluster.Leader(t, nodes)
	p := provider{t: t, url: nodes[0].URL}
	p.schema("s3")
	p.share("cloud")
	for _, table := range []string{"simple_table", "basic-dv-no-checkpoint", "cdf-table"} {
		name := sharedName(table)
		p.registerExternal("s3", name, upload(t, srv, "lake", "tables/"+table, table))
		p.add("cloud", "unity.s3."+name, "s3."+name, true)
	}
	prof := p.recipient("partner")
	p.grant("cloud", "partner")
	c := prof.client(t)
	c.caps = pyDetect
	for table, want := range map[string]int64{"simple_table": 3, "basic-dv-no-checkpoint": 8, "cdf-table": 9} {
		a := c.query(tablePath("cloud", "s3", sharedName(table)), map[string]any{}).mustOK(t)
		for _, u := range fileURLs(a) {
			if !strings.HasPrefix(u, srv.Endpoint+"/lake/tables/") || !strings.Contains(u, "X-Amz-Signature=") {
				t.Fatalf("%s: not a URL the S3 server signed: %s", table, u)
			}
			if status, _ := fetch(t, u[:strings.Index(u, "?")]); status == http.StatusOK {
				t.Fatalf("%s: the bucket serves files without a signature", table)
			}
		}
		if got := a.rows(t); got != want {
			t.Errorf("%s: %d rows, want %d", table, got, want)
		}
	}
	cdf := c.ndjson(http.MethodGet, tablePath("cloud", "s3", "cdf_table")+"/changes?startingVersion=1&endingVersion=3", nil).mustOK(t)
	if n := len(cdf.of("cdf")); n != 13 {
		t.Fatalf("change-data files: %d, want 13: %s", n, cdf.raw)
	}
	if got := changeRows(t, cdf); got[3]["delete"] != 1 || got[1]["update_postimage"] != 3 {
		t.Fatalf("change rows read from the bucket: %v", got)
	}
}

// fileURLs lists the data and deletion-vector URLs of a snapshot answer.
func fileURLs(a answer) []string {
	var out []string
	for _, f := range a.of("file") {
		if u, ok := f["url"].(string); ok {
			out = append(out, u)
			continue
		}
		add := f["deltaSingleAction"].(map[string]any)["add"].(map[string]any)
		out = append(out, add["path"].(string))
		if dv, ok := add["deletionVector"].(map[string]any); ok {
			out = append(out, dv["pathOrInlineDv"].(string))
		}
	}
	return out
}
