package lance

import (
	"context"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/storage"
)

// CredentialVendor hands out the credentials a client uses to reach a
// table location itself (storage.StaticCredentials is one).
type CredentialVendor interface {
	Vend(ctx context.Context, location, operation string) (storage.Credential, error)
}

// Vended credential operations.
const (
	opRead      = "READ"
	opReadWrite = "READ_WRITE"
)

// lanceOption is the storage option Lance reads each vended setting
// from; settings of other names pass as they are.
var lanceOption = map[string]string{
	"s3.access-key-id":     "aws_access_key_id",
	"s3.secret-access-key": "aws_secret_access_key",
	"s3.session-token":     "aws_session_token",
	"gcs.oauth-token":      "google_storage_token",
	"azure.sas-token":      "azure_storage_sas_token",
}

// storageOptions vends the credential of op for a table location as the
// storage_options of an answer: nil when there is nothing to vend (no
// vendor, a location whose cloud has no configured keys) or the client
// asked for none (vend_credentials: false).
func (s *Server) storageOptions(ctx context.Context, loc, op string, want *bool) (map[string]string, error) {
	if s.cfg.Credentials == nil || (want != nil && !*want) {
		return nil, nil
	}
	cred, err := s.cfg.Credentials.Vend(ctx, loc, op)
	if err != nil || len(cred.Config) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(cred.Config)+1)
	for k, v := range cred.Config {
		if name, ok := lanceOption[k]; ok {
			k = name
		}
		out[k] = v
	}
	if cred.ExpiresAtMs != nil {
		out["expires_at_millis"] = strconv.FormatInt(*cred.ExpiresAtMs, 10)
	}
	return out, nil
}

// readOperation is what a reader of a table gets: READ_WRITE when it may
// also change the table (MODIFY), else READ.
func (s *Server) readOperation(c echo.Context, st *fsm.State, tb *fsm.Table) string {
	if s.core.Allowed(c, st, access.OnTable(fsm.PrivModify, append(tb.NamespacePath(), tb.Name)...)) {
		return opReadWrite
	}
	return opRead
}
