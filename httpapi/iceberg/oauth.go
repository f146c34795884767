package iceberg

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/auth"
)

// The OAuth2 token endpoint of Iceberg REST clients: RFC 6749's client
// credentials grant (section 4.4). A client configured with a credential
// "client_id:client_secret" posts a form, grant_type=client_credentials,
// client_id, client_secret and scope (or sends the id and secret as HTTP
// Basic), and uses the access token answered as its bearer token on
// every other route. The client is a service principal; its secret is
// checked against the stored hash. Errors take OAuth's shape, {"error",
// "error_description"}, which is what clients parse from this endpoint,
// not the catalog's error envelope.

// oauthPath is the token endpoint, below Prefix (the spec's
// /v1/oauth/tokens, where clients look when configured with no other).
const oauthPath = "/v1/oauth/tokens"

// issuedTokenType is the RFC 8693 type of the tokens issued.
const issuedTokenType = "urn:ietf:params:oauth:token-type:access_token"

// maxScope bounds the scope a token carries.
const maxScope = 1024

// tokenResult is the spec's OAuthTokenResponse.
type tokenResult struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
}

// oauthError is the spec's OAuthError, with the status it answers.
type oauthError struct {
	status      int
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func badRequest(code, description string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, Code: code, Description: description}
}

func badClient(description string) *oauthError {
	return &oauthError{status: http.StatusUnauthorized, Code: "invalid_client", Description: description}
}

// tokenRequest is a client credentials grant request, read and checked.
type tokenRequest struct {
	clientID, secret, scope string
}

// issueToken answers POST {Prefix}/v1/oauth/tokens.
func (s *Server) issueToken(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store") // RFC 6749 section 5.1
	h.Set("Pragma", "no-cache")
	req, oerr := readTokenRequest(c.Request())
	if oerr != nil {
		return s.oauthFailure(c, oerr)
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	p, ok := st.PrincipalByClientID(req.clientID)
	if !ok || p.Type != fsm.PrincipalService || p.Secret == nil || !auth.Matches(*p.Secret, req.secret) {
		return s.oauthFailure(c, badClient("Unknown client or wrong client secret."))
	}
	httpapi.SetCaller(c, p.Name)
	if st, err = s.signingState(c, st); err != nil {
		return err
	}
	ttl, now := s.core.AccessTokenTTL(), time.Now()
	tok, err := auth.IssueAccessToken(st, p.Name, req.scope, ttl, now)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenResult{AccessToken: tok, TokenType: "bearer",
		ExpiresIn: int64(ttl / time.Second), IssuedTokenType: issuedTokenType})
}

// signingState is st once the cluster has a key to sign tokens with: a
// cluster running without authentication never made one, so the first
// token asked for makes it (a no-op should another request have won).
func (s *Server) signingState(c echo.Context, st *fsm.State) (*fsm.State, error) {
	if len(st.AuthSigningKeys()) > 0 {
		return st, nil
	}
	cmd := auth.NewSigningKey(0, true)
	cmd.Stamp = fsm.Stamp{Time: time.Now().UnixMilli(), Caller: httpapi.Caller(c)}
	if _, err := s.core.Propose(c, cmd); err != nil {
		return nil, err
	}
	return s.core.State(c)
}

func (s *Server) oauthFailure(c echo.Context, e *oauthError) error {
	if e.status == http.StatusUnauthorized {
		s.core.AuthFailed(c, "invalid")
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Basic realm="raftcat"`)
	}
	return c.JSON(e.status, e)
}

// readTokenRequest reads a client credentials grant: the form, its grant
// type, the client's credentials and the scope.
func readTokenRequest(r *http.Request) (tokenRequest, *oauthError) {
	form, oerr := tokenForm(r)
	if oerr != nil {
		return tokenRequest{}, oerr
	}
	switch grant := form.Get("grant_type"); grant {
	case "":
		return tokenRequest{}, badRequest("invalid_request", "grant_type is required.")
	case "client_credentials":
	default:
		return tokenRequest{}, badRequest("unsupported_grant_type",
			"Only the client_credentials grant is supported, not "+httpapi.Clip(grant)+".")
	}
	req, oerr := clientCredentials(r, form)
	if oerr != nil {
		return tokenRequest{}, oerr
	}
	req.scope = form.Get("scope")
	if len(req.scope) > maxScope || strings.ContainsFunc(req.scope, badScopeRune) {
		return tokenRequest{}, badRequest("invalid_scope", "The scope is malformed or too long.")
	}
	return req, nil
}

// tokenForm parses the form body; a parameter may appear once (RFC 6749
// section 3.2).
func tokenForm(r *http.Request) (url.Values, *oauthError) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); mt != echo.MIMEApplicationForm {
		return nil, badRequest("invalid_request", "The request must be a form ("+echo.MIMEApplicationForm+").")
	}
	if err := r.ParseForm(); err != nil {
		return nil, badRequest("invalid_request", "The form cannot be parsed: "+httpapi.Clip(err.Error()))
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			return nil, badRequest("invalid_request", "Parameter "+httpapi.Clip(k)+" is given more than once.")
		}
	}
	return r.PostForm, nil
}

// clientCredentials finds the client's id and secret: as HTTP Basic
// (each form-encoded first, RFC 6749 section 2.3.1) or as the form's
// client_id and client_secret, not both.
func clientCredentials(r *http.Request, form url.Values) (tokenRequest, *oauthError) {
	id, secret, basic := r.BasicAuth()
	if basic {
		if form.Has("client_secret") || (form.Has("client_id") && form.Get("client_id") != unescapeForm(id)) {
			return tokenRequest{}, badRequest("invalid_request", "Send the client's credentials one way: HTTP Basic or the form.")
		}
		id, secret = unescapeForm(id), unescapeForm(secret)
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if id == "" || secret == "" {
		return tokenRequest{}, badClient("The request must name the client (client_id) and carry its secret (client_secret).")
	}
	return tokenRequest{clientID: id, secret: secret}, nil
}

func unescapeForm(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// badScopeRune refuses what no scope token may hold (RFC 6749 section
// 3.3: printable ASCII but '"' and '\', tokens separated by spaces).
func badScopeRune(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }
