package storage

import (
	"context"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob:// through the default URL opener
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob" // gs:// through the default URL opener
	"gocloud.dev/blob/s3blob"
)

// BlobOptions say how Blobs reaches S3-compatible storage; credentials
// always come from each SDK's standard chain (for S3: AWS_ACCESS_KEY_ID
// and friends, shared config and profiles, web identity, instance roles).
type BlobOptions struct {
	// S3Endpoint overrides the S3 endpoint (an S3-compatible server, e.g.
	// http://127.0.0.1:7070); empty: AWS's endpoint for the region.
	S3Endpoint string
	// S3PathStyle addresses buckets as <endpoint>/<bucket>/<key> rather
	// than <bucket>.<endpoint>/<key>.
	S3PathStyle bool
	// S3Region is the region to sign for; empty: the SDK's chain
	// (AWS_REGION, the profile), else us-east-1.
	S3Region string
}

// openBucket opens the bucket a location lives in.
func (o BlobOptions) openBucket(ctx context.Context, ref objectRef) (*blob.Bucket, error) {
	switch ref.kind {
	case "file":
		// Temp files next to their target (rename stays on one
		// filesystem) and no attribute sidecars among table files.
		return fileblob.OpenBucket("/", &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	case "s3":
		return o.openS3(ctx, ref.bucket)
	case "gs":
		return blob.OpenBucket(ctx, "gs://"+url.PathEscape(ref.bucket))
	default: // azblob
		q := url.Values{"storage_account": {ref.host}, "domain": {ref.domain}}
		return blob.OpenBucket(ctx, "azblob://"+url.PathEscape(ref.bucket)+"?"+q.Encode())
	}
}

func (o BlobOptions) openS3(ctx context.Context, bucket string) (*blob.Bucket, error) {
	var load []func(*awsconfig.LoadOptions) error
	if o.S3Region != "" {
		load = append(load, awsconfig.WithRegion(o.S3Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.S3Endpoint != "" {
			so.BaseEndpoint = aws.String(o.S3Endpoint)
		}
		so.UsePathStyle = o.S3PathStyle
	})
	return s3blob.OpenBucket(ctx, client, bucket, &s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
}
