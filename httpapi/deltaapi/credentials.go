package deltaapi

import (
	"context"

	"github.com/raftcat/raftcat/storage"
)

// CredentialVendor hands out the credentials a client uses to reach a
// table location itself (storage.StaticCredentials is one).
type CredentialVendor interface {
	Vend(ctx context.Context, location, operation string) (storage.Credential, error)
}

// credentialFor renders the vended credential for a location.
func (s *Server) credentialFor(ctx context.Context, loc, op string) (storageCredential, error) {
	v := s.cfg.Credentials
	if v == nil {
		v = storage.StaticCredentials{}
	}
	c, err := v.Vend(ctx, loc, op)
	if err != nil {
		return storageCredential{}, err
	}
	if c.Config == nil {
		c.Config = map[string]string{}
	}
	return storageCredential{Prefix: c.Prefix, Operation: c.Operation, Config: c.Config, ExpirationTime: c.ExpiresAtMs}, nil
}
