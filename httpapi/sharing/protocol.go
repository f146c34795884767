package sharing

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

const (
	sharePath  = "/shares/:share"
	schemaPath = sharePath + "/schemas/:schema"
	tablePath  = schemaPath + "/tables/:table"
)

// mountProtocol registers the recipient-facing protocol. Its routes go
// to the leader and authenticate the bearer token there: a recipient's
// token is the protocol's own credential, not a principal's, so the core
// leaves these routes to authenticate. The file route is served by the
// node it reaches, to anyone holding a signed URL.
func (s *Server) mountProtocol() {
	g := s.core.Mount(httpapi.Group{Name: "sharing", Prefix: Prefix, Errors: errorMapping{}, Relay: true})
	api := func(method, path string, h echo.HandlerFunc) {
		g.Add(method, path, httpapi.SelfAuthenticated(), h, linearizable, s.core.ToLeader, s.authenticate)
	}
	api(http.MethodGet, "/shares", s.listShares)
	api(http.MethodGet, sharePath, s.getShare)
	api(http.MethodGet, sharePath+"/schemas", s.listSchemas)
	api(http.MethodGet, schemaPath+"/tables", s.listTables)
	api(http.MethodGet, sharePath+"/all-tables", s.listAllTables)
	api(http.MethodGet, tablePath+"/version", s.tableVersion)
	api(http.MethodHead, tablePath, s.tableVersion)
	api(http.MethodGet, tablePath+"/metadata", s.metadata)
	api(http.MethodPost, tablePath+"/query", s.query)
	api(http.MethodGet, tablePath+"/changes", s.changes)
	g.GET(FilesPath+"/:token", httpapi.Public(), s.serveFile)
	g.HEAD(FilesPath+"/:token", httpapi.Public(), s.serveFile)
}

// linearizable drops a request for a stale read: recipients are always
// answered from linearizable state, so that a revoked grant or token is
// refused at once, whatever node is asked and however.
func linearizable(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Request().Header.Del(httpapi.HeaderConsistency)
		return next(c)
	}
}

// principal is an authenticated recipient and the state its request is
// answered from.
type principal struct {
	recipient *fsm.Recipient
	state     *fsm.State
}

const principalKey = "sharing.principal"

func principalOf(c echo.Context) *principal { return c.Get(principalKey).(*principal) }

// authenticate resolves the bearer token to a recipient in linearizable
// state: a missing, unknown, expired or revoked token is a 401 that
// names nothing the caller may not see.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, ok := bearer(c.Request())
		if !ok {
			s.core.AuthFailed(c, "missing")
			return unauthenticated("Missing bearer token: send Authorization: Bearer <token> from your profile file.")
		}
		st, err := s.core.State(c)
		if err != nil {
			return err
		}
		rec, tok, found := st.RecipientByBearer(HashSecret(token))
		if !found || subtle.ConstantTimeCompare([]byte(tok.BearerHash), []byte(HashSecret(token))) != 1 {
			s.core.AuthFailed(c, "invalid")
			return unauthenticated("The bearer token is not valid.")
		}
		if tok.ExpiredAt(time.Now().UnixMilli()) {
			s.core.AuthFailed(c, "expired")
			return unauthenticated("The bearer token has expired; ask your data provider for a new profile.")
		}
		httpapi.SetCaller(c, rec.Name)
		c.Set(principalKey, &principal{recipient: rec, state: st})
		return next(c)
	}
}

func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// HashSecret is how bearer tokens and activation codes are stored: the
// hex SHA-256 of the secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
