package s3test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestServerStoresObjects(t *testing.T) {
	s := Start(t)
	s.CreateBucket(t, "warehouse")
	ctx := context.Background()
	c := s.Client()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("warehouse"), Key: aws.String("a/b.json"),
		Body: strings.NewReader("hello")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("warehouse"), Key: aws.String("a/b.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	if b, _ := io.ReadAll(out.Body); string(b) != "hello" {
		t.Fatalf("read back %q", b)
	}
}
