// Package authapi serves the management of principals and API tokens
// under /v1/auth: creating and deleting principals (admins), creating
// tokens (admins for anyone, a principal for itself) and revoking them,
// rotating the key that signs OAuth2 access tokens, and whoami. Tokens
// and client secrets are shown once, in the answer that creates them;
// the state keeps only their salted hashes.
package authapi

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/admin"
	"github.com/raftcat/raftcat/internal/auth"
)

// Prefix is where the routes are served.
const Prefix = "/v1/auth"

// DefaultTokenTTL is the lifetime of a token created without one.
const DefaultTokenTTL = 90 * 24 * time.Hour

type server struct{ core *httpapi.Server }

// Register mounts the routes; they run on the leader.
func Register(core *httpapi.Server) {
	s := &server{core: core}
	g := core.Mount(httpapi.Group{Name: "auth", Prefix: Prefix, Errors: admin.Errors(), ToLeader: true, Relay: true})
	g.POST("/principals", httpapi.AdminOnly(), httpapi.Write(core, buildCreatePrincipal, nil, principalAnswer))
	g.GET("/principals", httpapi.AdminOnly(), s.listPrincipals)
	g.GET("/principals/:name", httpapi.AdminOnly(), s.getPrincipal)
	g.DELETE("/principals/:name", httpapi.AdminOnly(), httpapi.Write(core, buildDeletePrincipal, nil, principalAnswer))
	g.POST("/tokens", tokenOwner, httpapi.Write(core, buildCreateToken, nil, tokenAnswer))
	g.DELETE("/tokens/:id", httpapi.Needs(func(c echo.Context) ([]access.Need, error) {
		return []access.Need{access.TokenOwner(c.Param("id"))}, nil
	}), httpapi.Write(core, buildRevokeToken, nil, revokedAnswer))
	g.POST("/signing-keys/rotate", httpapi.AdminOnly(), httpapi.Write(core, buildRotateKey, nil, keysAnswer))
	g.GET("/whoami", httpapi.AnyCaller(), s.whoami)
}

// principalInfo is a principal as answered; a service principal's
// secret only in the answer that creates it.
type principalInfo struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	Admin        bool   `json:"admin"`
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	CreatedAt    int64  `json:"created_at"`
	CreatedBy    string `json:"created_by,omitempty"`
}

func toInfo(p *fsm.Principal) principalInfo {
	return principalInfo{Name: p.Name, Type: p.Type, Admin: p.Admin, ClientID: p.ClientID, CreatedAt: p.CreatedAt, CreatedBy: p.CreatedBy}
}

type createPrincipalReq struct {
	Name *string `json:"name"`
	Type string  `json:"type"`
}

// secretKey carries a new client secret from build to the answer.
const secretKey = "authapi.secret"

func buildCreatePrincipal(in *httpapi.In[createPrincipalReq]) (*fsm.CreatePrincipal, error) {
	if in.Body.Name == nil || *in.Body.Name == "" {
		return nil, httpapi.Invalid("name is required.")
	}
	p := fsm.Principal{Name: *in.Body.Name, Type: in.Body.Type}
	if p.Type == "" {
		p.Type = fsm.PrincipalUser
	}
	if p.Type == fsm.PrincipalService {
		secret := auth.NewSecret(32)
		h := auth.HashSecret(secret)
		p.ClientID, p.Secret = uuid.NewString(), &h
		in.Set(secretKey, secret)
	}
	return &fsm.CreatePrincipal{Stamp: in.Stamp, Principal: p}, nil
}

func principalAnswer(c echo.Context, res fsm.Result) error {
	info := toInfo(res.Principal)
	info.ClientSecret, _ = c.Get(secretKey).(string)
	return c.JSON(http.StatusOK, info)
}

func (s *server) listPrincipals(c echo.Context) error {
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	out := []principalInfo{}
	for _, p := range st.Principals("", 0) {
		out = append(out, toInfo(p))
	}
	return c.JSON(http.StatusOK, map[string]any{"principals": out})
}

func (s *server) getPrincipal(c echo.Context) error {
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	p, ok := st.Principal(c.Param("name"))
	if !ok {
		return fsm.Errf(fsm.CodePrincipalNotFound, "Principal not found: %s", c.Param("name"))
	}
	return c.JSON(http.StatusOK, toInfo(p))
}

func buildDeletePrincipal(in *httpapi.In[httpapi.NoBody]) (*fsm.DeletePrincipal, error) {
	return &fsm.DeletePrincipal{Stamp: in.Stamp, Name: in.Param("name")}, nil
}

type createTokenReq struct {
	Principal  string `json:"principal"`
	TTLSeconds *int64 `json:"ttl_seconds"`
}

// tokenOwner: an admin may create a token for anyone, a principal for
// itself (the principal the body names, the caller when it names none).
var tokenOwner = httpapi.Needs(func(c echo.Context) ([]access.Need, error) {
	var b createTokenReq
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	if b.Principal == "" {
		return nil, nil
	}
	return []access.Need{access.Self(b.Principal)}, nil
})

// tokenKey carries a new token's text from build to the answer.
const tokenKey = "authapi.token"

func buildCreateToken(in *httpapi.In[createTokenReq]) (*fsm.CreateAuthToken, error) {
	who := in.Body.Principal
	if who == "" {
		who = httpapi.Caller(in.Context)
	}
	if who == "" {
		return nil, httpapi.Invalid("principal is required.")
	}
	ttl := DefaultTokenTTL
	if v := in.Body.TTLSeconds; v != nil {
		if *v < 0 || *v > 100*365*24*3600 {
			return nil, httpapi.Invalid("ttl_seconds must be between 0 (no expiry) and 100 years, got %d.", *v)
		}
		ttl = time.Duration(*v) * time.Second
	}
	text, tok := auth.NewToken(who, ttl, time.UnixMilli(in.Stamp.Time))
	in.Set(tokenKey, text)
	return &fsm.CreateAuthToken{Stamp: in.Stamp, Token: tok}, nil
}

type tokenInfo struct {
	ID        string `json:"id"`
	Token     string `json:"token,omitempty"`
	Principal string `json:"principal"`
	ExpiresAt *int64 `json:"expires_at"`
}

func tokenAnswer(c echo.Context, res fsm.Result) error {
	k := res.AuthToken
	info := tokenInfo{ID: k.ID, Principal: k.Principal}
	info.Token, _ = c.Get(tokenKey).(string)
	if k.ExpiresAt != 0 {
		info.ExpiresAt = &k.ExpiresAt
	}
	return c.JSON(http.StatusOK, info)
}

func buildRevokeToken(in *httpapi.In[httpapi.NoBody]) (*fsm.RevokeAuthToken, error) {
	return &fsm.RevokeAuthToken{Stamp: in.Stamp, ID: in.Param("id")}, nil
}

func revokedAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, tokenInfo{ID: res.AuthToken.ID, Principal: res.AuthToken.Principal})
}

type rotateKeyReq struct {
	GraceSeconds *int64 `json:"grace_seconds"`
}

// DefaultKeyGrace is how long tokens of a rotated key stay valid when
// the rotation names no grace period: the lifetime of the tokens.
const DefaultKeyGrace = time.Hour

func buildRotateKey(in *httpapi.In[rotateKeyReq]) (*fsm.SetAuthSigningKey, error) {
	grace := DefaultKeyGrace
	if v := in.Body.GraceSeconds; v != nil {
		if *v < 0 {
			return nil, httpapi.Invalid("grace_seconds may not be negative, got %d.", *v)
		}
		grace = time.Duration(*v) * time.Second
	}
	cmd := auth.NewSigningKey(grace, false)
	cmd.Stamp = in.Stamp
	return cmd, nil
}

func keysAnswer(c echo.Context, res fsm.Result) error {
	type keyInfo struct {
		ID          string `json:"id"`
		CreatedAt   int64  `json:"created_at"`
		RetiredAt   int64  `json:"retired_at,omitempty"`
		RefuseAfter int64  `json:"refuse_after,omitempty"`
	}
	out := []keyInfo{}
	for _, k := range res.AuthKeys.Keys {
		out = append(out, keyInfo{ID: k.ID, CreatedAt: k.CreatedAt, RetiredAt: k.RetiredAt, RefuseAfter: k.RefuseAfter})
	}
	return c.JSON(http.StatusOK, map[string]any{"keys": out})
}

func (s *server) whoami(c echo.Context) error {
	id, ok := httpapi.IdentityOf(c)
	if !ok {
		return c.JSON(http.StatusOK, map[string]any{"principal": nil, "anonymous": true})
	}
	st, _ := s.core.Node().StaleState()
	return c.JSON(http.StatusOK, map[string]any{"principal": id.Principal, "kind": id.Kind,
		"admin": id.Kind == auth.KindBootstrap || access.IsAdmin(st, id.Principal)})
}
