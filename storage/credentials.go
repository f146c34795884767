package storage

import (
	"context"
	"strings"
	"time"
)

// Credential is what a client gets to reach one table location itself.
type Credential struct {
	Prefix    string            // the location it is good for
	Operation string            // READ or READ_WRITE
	Config    map[string]string // client settings, e.g. s3.access-key-id
	// ExpiresAtMs is when the credential stops being valid (Unix ms);
	// nil: it does not expire (nothing was vended).
	ExpiresAtMs *int64
}

// StaticCredentials vend fixed cloud credentials for table locations on
// that cloud (a deployment without a token-vending service configures
// long-lived or role-scoped keys here). Empty fields vend nothing:
// clients then use their ambient credentials.
type StaticCredentials struct {
	S3AccessKeyID     string
	S3SecretAccessKey string
	S3SessionToken    string
	GCSOAuthToken     string
	AzureSASToken     string
	// ReadOnly, if set, are the keys vended for READ: keys scoped to
	// reading, so that a caller allowed only to read gets no keys that
	// write. Without them, READ vends the keys above.
	ReadOnly *StaticCredentials
	// TTL is how long vended credentials are declared valid (0: 1h).
	TTL time.Duration
}

// OperationRead and OperationReadWrite are the operations credentials
// are vended for.
const (
	OperationRead      = "READ"
	OperationReadWrite = "READ_WRITE"
)

// Vend returns the credential for a location: the configured keys of the
// location's cloud, and only those; local (file://) locations get an
// empty config and no expiry.
func (sc StaticCredentials) Vend(_ context.Context, loc, op string) (Credential, error) {
	keys := sc
	if op == OperationRead && sc.ReadOnly != nil {
		keys = *sc.ReadOnly
	}
	cred := Credential{Prefix: loc, Operation: op, Config: keys.config(loc)}
	if len(cred.Config) > 0 {
		ttl := sc.TTL
		if ttl <= 0 {
			ttl = time.Hour
		}
		exp := time.Now().Add(ttl).UnixMilli()
		cred.ExpiresAtMs = &exp
	}
	return cred, nil
}

func (sc StaticCredentials) config(loc string) map[string]string {
	cfg := map[string]string{}
	scheme, _, _ := strings.Cut(loc, "://")
	switch scheme {
	case "s3", "s3a":
		if sc.S3AccessKeyID != "" {
			cfg["s3.access-key-id"] = sc.S3AccessKeyID
			cfg["s3.secret-access-key"] = sc.S3SecretAccessKey
			if sc.S3SessionToken != "" {
				cfg["s3.session-token"] = sc.S3SessionToken
			}
		}
	case "gs":
		if sc.GCSOAuthToken != "" {
			cfg["gcs.oauth-token"] = sc.GCSOAuthToken
		}
	case "abfs", "abfss":
		if sc.AzureSASToken != "" {
			cfg["azure.sas-token"] = sc.AzureSASToken
		}
	}
	return cfg
}
