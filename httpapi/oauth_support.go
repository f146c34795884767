package httpapi

import "time"

// AccessTokenTTL is how long the OAuth2 access tokens a protocol's token
// endpoint issues live: the authenticator's setting, or an hour when the
// node runs without one (such a node still issues tokens to the service
// principals that ask, so clients configured for them keep working).
func (s *Server) AccessTokenTTL() time.Duration {
	if s.cfg.Auth == nil {
		return time.Hour
	}
	return s.cfg.Auth.AccessTokenTTL()
}
