package deltaapi

import (
	"strings"
	"time"
)

// StaticCredentials are cloud credentials the catalog vends for table
// locations on that cloud (a deployment without a token-vending service
// configures long-lived or role-scoped keys here). Empty fields vend
// nothing: clients then use their ambient credentials.
type StaticCredentials struct {
	S3AccessKeyID     string
	S3SecretAccessKey string
	S3SessionToken    string
	GCSOAuthToken     string
	AzureSASToken     string
	// TTL is how long vended credentials are declared valid (0: 1h).
	TTL time.Duration
}

// credentialFor vends the credential for a location: the configured keys
// of the location's cloud, and only those; local (file://) locations get
// an empty config and no expiry.
func (s *Server) credentialFor(loc, op string) storageCredential {
	cred := storageCredential{Prefix: loc, Operation: op, Config: map[string]string{}}
	sc := s.cfg.Credentials
	scheme, _, _ := strings.Cut(loc, "://")
	switch scheme {
	case "s3", "s3a":
		if sc.S3AccessKeyID != "" {
			cred.Config["s3.access-key-id"] = sc.S3AccessKeyID
			cred.Config["s3.secret-access-key"] = sc.S3SecretAccessKey
			if sc.S3SessionToken != "" {
				cred.Config["s3.session-token"] = sc.S3SessionToken
			}
		}
	case "gs":
		if sc.GCSOAuthToken != "" {
			cred.Config["gcs.oauth-token"] = sc.GCSOAuthToken
		}
	case "abfs", "abfss":
		if sc.AzureSASToken != "" {
			cred.Config["azure.sas-token"] = sc.AzureSASToken
		}
	}
	if len(cred.Config) > 0 {
		ttl := sc.TTL
		if ttl <= 0 {
			ttl = time.Hour
		}
		exp := time.Now().Add(ttl).UnixMilli()
		cred.ExpirationTime = &exp
	}
	return cred
}
