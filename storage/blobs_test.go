package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/raftcat/raftcat/internal/s3test"
	"github.com/raftcat/raftcat/storage"
)

// exercise runs the operations every scheme must serve below root.
func exercise(t *testing.T, st storage.ObjectStore, root string) {
	ctx := context.Background()
	a, b := storage.Join(root, "_delta_log/00000000000000000001.json"), storage.Join(root, "_delta_log/_staged_commits/00000000000000000001.x.json")
	if err := st.Write(ctx, a, []byte("first")); err != nil {
		t.Fatalf("write %s: %v", a, err)
	}
	if err := st.Write(ctx, a, []byte("second")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create of %s: %v, want ErrExists", a, err)
	}
	if got, err := st.Read(ctx, a); err != nil || string(got) != "first" {
		t.Fatalf("read after refused overwrite: %q %v", got, err)
	}
	if err := st.Write(ctx, b, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if same, err := storage.SameContent(ctx, st, a, b); err != nil || !same {
		t.Fatalf("same content: %v %v", same, err)
	}
	if got, err := st.ReadRange(ctx, a, 1, 3); err != nil || string(got) != "irs" {
		t.Fatalf("range: %q %v", got, err)
	}
	if info, err := st.Stat(ctx, a); err != nil || info.Size != 5 || info.ModTime.IsZero() {
		t.Fatalf("stat: %+v %v", info, err)
	}
	list, err := st.List(ctx, storage.Join(root, "_delta_log")+"/")
	if err != nil {
		t.Fatal(err)
	}
	var locs []string
	for _, o := range list {
		locs = append(locs, o.Location)
	}
	if !slices.Equal(locs, []string{a, b}) {
		t.Fatalf("list = %v, want %v", locs, []string{a, b})
	}
	missing := storage.Join(root, "_delta_log/00000000000000000002.json")
	if _, err := st.Read(ctx, missing); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("read missing: %v", err)
	}
	if _, err := st.Stat(ctx, missing); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("stat missing: %v", err)
	}
	if _, err := storage.SameContent(ctx, st, a, missing); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("compare with missing: %v", err)
	}
	if err := st.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Read(ctx, b); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("read deleted: %v", err)
	}
}

func TestBlobsOnLocalFiles(t *testing.T) {
	st := storage.NewBlobs(storage.BlobOptions{})
	defer st.Close()
	dir := t.TempDir()
	root := "file://" + filepath.ToSlash(dir) + "/table"
	exercise(t, st, root)

	// Only the table's own files are on disk: no attribute sidecars, no
	// temp files left behind.
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if !slices.Equal(files, []string{"table/_delta_log/00000000000000000001.json"}) {
		t.Fatalf("files on disk: %v", files)
	}
	// A directory is not an object.
	if _, err := st.Read(context.Background(), "file://"+filepath.ToSlash(dir)+"/table/_delta_log"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("read a directory: %v", err)
	}
	// Local files have no URL signer.
	if _, err := st.SignedURL(context.Background(), root+"/_delta_log/00000000000000000001.json", time.Minute); !errors.Is(err, storage.ErrSigningUnsupported) {
		t.Fatalf("signed file URL: %v", err)
	}
}

func startS3(t *testing.T) (*s3test.Server, *storage.Blobs) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.Setenv(t) // the store finds its keys through the SDK's chain
	st := storage.NewBlobs(storage.BlobOptions{S3Endpoint: srv.Endpoint, S3PathStyle: true})
	t.Cleanup(func() { st.Close() })
	return srv, st
}

func TestBlobsOnS3(t *testing.T) {
	srv, st := startS3(t)
	exercise(t, st, "s3://lake/warehouse/t1")

	// The objects really are in the bucket, under the keys the locations name.
	ctx := context.Background()
	out, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lake"),
		Key: aws.String("warehouse/t1/_delta_log/00000000000000000001.json")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(body) != "first" {
		t.Fatalf("bucket holds %q", body)
	}
	// s3a:// names the same objects.
	if got, err := st.Read(ctx, "s3a://lake/warehouse/t1/_delta_log/00000000000000000001.json"); err != nil || string(got) != "first" {
		t.Fatalf("s3a read: %q %v", got, err)
	}
	if err := st.Write(ctx, "s3a://lake/warehouse/t1/_delta_log/00000000000000000001.json", []byte("x")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("s3a overwrite: %v", err)
	}
}

func TestSignedURLsOnS3(t *testing.T) {
	_, st := startS3(t)
	ctx := context.Background()
	loc := "s3://lake/warehouse/t2/part-00000.parquet"
	if err := st.Write(ctx, loc, []byte("parquet bytes")); err != nil {
		t.Fatal(err)
	}
	signed, err := st.SignedURL(ctx, loc, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := get(t, signed); status != http.StatusOK || body != "parquet bytes" {
		t.Fatalf("GET signed URL: %d %q", status, body)
	}
	// The signature is what grants access: without it, or altered, no.
	u, _ := url.Parse(signed)
	unsigned := *u
	unsigned.RawQuery = ""
	if status, _ := get(t, unsigned.String()); status != http.StatusForbidden {
		t.Fatalf("GET without signature: %d", status)
	}
	q := u.Query()
	q.Set("X-Amz-Signature", strings.Repeat("0", len(q.Get("X-Amz-Signature"))))
	u.RawQuery = q.Encode()
	if status, _ := get(t, u.String()); status != http.StatusForbidden {
		t.Fatalf("GET with a wrong signature: %d", status)
	}
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLocationsOfEveryScheme(t *testing.T) {
	st := storage.NewBlobs(storage.BlobOptions{})
	ctx := context.Background()
	for _, loc := range []string{"ftp://x/y", "s3:///nobucket/k", "abfss://acct.dfs.core.windows.net/k", "file://host/x"} {
		if _, err := st.Read(ctx, loc); err == nil || errors.Is(err, storage.ErrNotFound) {
			t.Errorf("read %s: %v, want a location error", loc, err)
		}
	}
}

// Of writers racing to create one local file, exactly one succeeds and
// the file holds its bytes: a loser that later removes what it believes
// it wrote cannot remove the winner's file.
func TestLocalCreateOnlyRace(t *testing.T) {
	st := storage.NewBlobs(storage.BlobOptions{})
	defer st.Close()
	dir := t.TempDir()
	for round := range 20 {
		loc := fmt.Sprintf("file://%s/_versions/%d.manifest", filepath.ToSlash(dir), round)
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() { errs[i] = st.Write(context.Background(), loc, []byte(fmt.Sprintf("writer %d", i))) })
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both created the file", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, storage.ErrExists):
				t.Fatalf("round %d: writer %d: %v", round, i, err)
			}
		}
		got, err := st.Read(context.Background(), loc)
		if winner < 0 || err != nil || string(got) != fmt.Sprintf("writer %d", winner) {
			t.Fatalf("round %d: winner %d, file %q %v", round, winner, got, err)
		}
	}
	entries, _ := os.ReadDir(dir + "/_versions")
	if len(entries) != 20 {
		t.Fatalf("%d entries in the directory, want the 20 files and no temporary ones", len(entries))
	}
}
