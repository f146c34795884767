package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/raftcat/raftcat/internal/localcluster"
	"github.com/raftcat/raftcat/internal/s3test"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// s3Engine plays a catalog-managed Delta writer whose table lives in a
// bucket: it writes staged commits with the S3 API, using the keys the
// catalog vended, ratifies them through a different node each time,
// publishes them to _delta_log/ and reports the backfill.
type s3Engine struct {
	t      *testing.T
	s3     *s3.Client
	bucket string
	prefix string // the table's key prefix in the bucket
	urls   []string
	path   string
	id     string
	calls  int
}

func (e *s3Engine) node() string {
	e.calls++
	return e.urls[e.calls%len(e.urls)]
}

func (e *s3Engine) put(key, content string) {
	e.t.Helper()
	_, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &e.bucket, Key: aws.String(e.prefix + key),
		Body: strings.NewReader(content), IfNoneMatch: aws.String("*")})
	if err != nil {
		e.t.Fatalf("put %s: %v", key, err)
	}
}

func (e *s3Engine) get(key string) string {
	e.t.Helper()
	out, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &e.bucket, Key: aws.String(e.prefix + key)})
	if err != nil {
		e.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b)
}

// stage writes version v's staged commit and returns its file name.
func (e *s3Engine) stage(v int64, variant, content string) string {
	e.t.Helper()
	name := testcluster.StagedName(v, variant)
	e.put("_delta_log/_staged_commits/"+name, content)
	return name
}

// commit ratifies a staged file with its real size and modification time.
func (e *s3Engine) commit(v int64, name string) testcluster.Response {
	e.t.Helper()
	head, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &e.bucket,
		Key: aws.String(e.prefix + "_delta_log/_staged_commits/" + name)})
	if err != nil {
		e.t.Fatalf("head %s: %v", name, err)
	}
	body := testcluster.CommitBody(e.id, v, name)
	c := body["updates"].([]any)[0].(map[string]any)["commit"].(map[string]any)
	c["file-size"], c["file-modification-timestamp"] = *head.ContentLength, head.LastModified.UnixMilli()
	return testcluster.Do(e.t, http.MethodPost, e.node()+e.path, body)
}

// publish copies the ratified staged commit to _delta_log/<v>.json and
// reports the backfill.
func (e *s3Engine) publish(v int64, name string) {
	e.t.Helper()
	e.put(fmt.Sprintf("_delta_log/%020d.json", v), e.get("_delta_log/_staged_commits/"+name))
	r := testcluster.Do(e.t, http.MethodPost, e.node()+e.path, map[string]any{
		"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": e.id}},
		"updates":      []any{map[string]any{"action": "set-latest-backfilled-version", "latest-published-version": v}}})
	if r.Status != http.StatusOK {
		e.t.Fatalf("report backfill %d: %d %s", v, r.Status, r.Raw)
	}
}

func (e *s3Engine) keys() []string {
	e.t.Helper()
	out, err := e.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &e.bucket, Prefix: aws.String(e.prefix)})
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, strings.TrimPrefix(*o.Key, e.prefix))
	}
	return keys
}

func commitLines(v int64) string {
	return fmt.Sprintf(`{"commitInfo":{"inCommitTimestamp":%d,"operation":"WRITE","txnId":"txn-%d"}}`+"\n"+
		`{"add":{"path":"part-%05d.parquet","size":%d,"dataChange":true,"modificationTime":%d}}`+"\n",
		1700000000000+v, v, v, 100+v, 1700000000000+v)
}

// startS3Cluster runs versitygw and three raftcat processes whose managed
// storage is s3://lake/warehouse; the nodes reach the bucket through the
// AWS SDK's standard chain (environment keys) and the RAFTCAT_S3_* settings,
// and vend the same keys to clients.
func startS3Cluster(t *testing.T) (*s3test.Server, *localcluster.Cluster) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	env := append(srv.Env(), "RAFTCAT_S3_ENDPOINT="+srv.Endpoint, "RAFTCAT_S3_PATH_STYLE=true",
		"RAFTCAT_S3_ACCESS_KEY_ID="+srv.AccessKey, "RAFTCAT_S3_SECRET_ACCESS_KEY="+srv.SecretKey)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Bin: raftcatBinary(t), Dir: dir, Nodes: 3, Env: env,
		Flags: []string{"--storage-root", "s3://lake/warehouse", "--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms"}})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, n := range c.Names() {
				b, _ := os.ReadFile(filepath.Join(dir, n+".log"))
				t.Logf("---- %s log ----\n%s", n, b)
			}
		}
	})
	return srv, c
}

// engineFor creates a managed table through staging and returns an engine
// that reaches the bucket with the credentials the catalog vended for it.
func engineFor(t *testing.T, srv *s3test.Server, urls []string, name string) *s3Engine {
	st := testcluster.Stage(t, urls[0], "unity", "default", name)
	loc, _ := st.Body["location"].(string)
	if !strings.HasPrefix(loc, "s3://lake/warehouse/") {
		t.Fatalf("staging location %q, want one below s3://lake/warehouse/", loc)
	}
	cred := st.Body["storage-credentials"].([]any)[0].(map[string]any)["config"].(map[string]any)
	r := testcluster.Do(t, http.MethodPost, urls[1]+testcluster.DeltaBase+"/catalogs/unity/schemas/default/tables",
		testcluster.CreateManagedBody(name, st))
	if r.Status != http.StatusOK {
		t.Fatalf("create %s: %d %s", name, r.Status, r.Raw)
	}
	keys := credentials.NewStaticCredentialsProvider(cred["s3.access-key-id"].(string), cred["s3.secret-access-key"].(string), "")
	client := s3.NewFromConfig(aws.Config{Region: srv.Region, Credentials: keys}, func(o *s3.Options) {
		o.BaseEndpoint, o.UsePathStyle = aws.String(srv.Endpoint), true
	})
	return &s3Engine{t: t, s3: client, bucket: "lake", prefix: strings.TrimPrefix(loc, "s3://lake/") + "/",
		urls: urls, path: testcluster.TablePath("unity", "default", name), id: st.Body["table-id"].(string)}
}

// TestDeltaCommitsOnS3AcrossThreeProcesses: a managed table in a real
// S3-compatible bucket, written by an engine through the S3 API and
// ratified, published and replayed through three raftcat processes.
func TestDeltaCommitsOnS3AcrossThreeProcesses(t *testing.T) {
	srv, c := startS3Cluster(t)
	e := engineFor(t, srv, c.URLs(), "lakefiles")
	var want []string
	names := map[int64]string{}
	for v := int64(1); v <= 6; v++ {
		names[v] = e.stage(v, "0b2c9b7e", commitLines(v))
		if r := e.commit(v, names[v]); r.Status != http.StatusOK {
			t.Fatalf("commit v%d: %d %s", v, r.Status, r.Raw)
		}
		if v%3 == 0 {
			for p := v - 2; p <= v; p++ {
				e.publish(p, names[p])
			}
		}
	}
	for v := int64(1); v <= 6; v++ {
		want = append(want, fmt.Sprintf("_delta_log/%020d.json", v), "_delta_log/_staged_commits/"+names[v])
	}
	slices.Sort(want)
	if got := e.keys(); !slices.Equal(got, want) {
		t.Fatalf("bucket holds %v,\nwant %v", got, want)
	}
	for v := int64(1); v <= 6; v++ {
		if got := e.get(fmt.Sprintf("_delta_log/%020d.json", v)); got != commitLines(v) {
			t.Fatalf("published v%d = %q", v, got)
		}
	}
	load := testcluster.Do(t, http.MethodGet, c.URLs()[2]+e.path, nil)
	if load.Body["latest-table-version"] != float64(6) || len(load.Body["commits"].([]any)) != 0 {
		t.Fatalf("after publishing everything: %s", load.Raw)
	}
	checkPurgedReplays(t, e, names)
}

// checkPurgedReplays: versions 1..6 are published and no longer tracked,
// so a commit of one of them is judged by comparing, in the bucket, its
// published file with the staged one it names.
func checkPurgedReplays(t *testing.T, e *s3Engine, names map[int64]string) {
	// A writer whose acknowledgement of v5 was lost retries it byte for byte.
	if r := e.commit(5, names[5]); r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(6) {
		t.Fatalf("replay of purged v5: %d %s", r.Status, r.Raw)
	}
	// Another writer that staged different content for v5 lost the race.
	loser := e.stage(5, "1c3dae8f", commitLines(500))
	r := e.commit(5, loser)
	if r.Status != http.StatusConflict || r.Body["error"].(map[string]any)["type"] != "CommitVersionConflictException" ||
		!strings.Contains(r.Text(), "already published") {
		t.Fatalf("purged v5 with other content: %d %s", r.Status, r.Raw)
	}
	// Without the published file in the bucket the outcome is unknown.
	if _, err := e.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &e.bucket,
		Key: aws.String(e.prefix + fmt.Sprintf("_delta_log/%020d.json", 4))}); err != nil {
		t.Fatal(err)
	}
	r = e.commit(4, names[4])
	if r.Status != http.StatusInternalServerError || r.Body["error"].(map[string]any)["type"] != "CommitStateUnknownException" ||
		!strings.Contains(r.Text(), "retry") {
		t.Fatalf("purged v4 without its published file: %d %s", r.Status, r.Raw)
	}
	names[7] = e.stage(7, "0b2c9b7e", commitLines(7))
	if r := e.commit(7, names[7]); r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(7) {
		t.Fatalf("commit v7: %d %s", r.Status, r.Raw)
	}
}
