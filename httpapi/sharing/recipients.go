package sharing

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/ucrest"
)

// Recipients and their tokens. A token is born with a one-time
// activation code, shown once in the answer that created it (as its
// activation_url); downloading the profile there draws the bearer token
// and stores its hash. Neither secret is ever stored in clear.

func (s *Server) mountRecipients(g *httpapi.Routes) {
	g.POST("", httpapi.AdminOnly(), httpapi.Write(s.core, s.buildCreateRecipient, nil, s.recipientAnswer))
	g.GET("", httpapi.AnyCaller(), s.listRecipients)
	g.GET("/:name", httpapi.Needs(recipientOwner), s.getRecipient)
	g.DELETE("/:name", httpapi.Needs(recipientOwner), httpapi.Write(s.core, buildDeleteRecipient, nil, emptyAnswer))
	g.POST("/:name/rotate-token", httpapi.Needs(recipientOwner), httpapi.Write(s.core, s.buildRotateToken, nil, s.recipientAnswer))
}

// recipientOwner is the need of owning the recipient the route names.
func recipientOwner(c echo.Context) ([]access.Need, error) {
	return []access.Need{access.RecipientOwner(c.Param("name"))}, nil
}

type tokenInfo struct {
	ID             string `json:"id"`
	ActivationURL  string `json:"activation_url,omitempty"`
	ExpirationTime int64  `json:"expiration_time,omitempty"`
	CreatedAt      int64  `json:"created_at"`
	CreatedBy      string `json:"created_by,omitempty"`
	UpdatedAt      int64  `json:"updated_at"`
	Activated      bool   `json:"activated"`
}

type recipientInfo struct {
	Name               string      `json:"name"`
	AuthenticationType string      `json:"authentication_type"`
	Comment            *string     `json:"comment,omitempty"`
	Owner              string      `json:"owner,omitempty"`
	CreatedAt          int64       `json:"created_at"`
	CreatedBy          string      `json:"created_by,omitempty"`
	UpdatedAt          int64       `json:"updated_at"`
	UpdatedBy          string      `json:"updated_by,omitempty"`
	ID                 string      `json:"id"`
	Activated          bool        `json:"activated"`
	Tokens             []tokenInfo `json:"tokens"`
}

// toRecipientInfo shows a recipient; fresh maps a token id to the
// activation URL of a token created by this very request.
func toRecipientInfo(r *fsm.Recipient, fresh map[string]string) recipientInfo {
	out := recipientInfo{Name: r.Name, AuthenticationType: r.AuthenticationType, Comment: r.Comment, Owner: r.Owner,
		CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy, UpdatedAt: r.UpdatedAt, UpdatedBy: r.UpdatedBy, ID: r.ID, Tokens: []tokenInfo{}}
	for _, t := range r.Tokens {
		active := t.BearerHash != ""
		out.Activated = out.Activated || active
		out.Tokens = append(out.Tokens, tokenInfo{ID: t.ID, ActivationURL: fresh[t.ID], ExpirationTime: t.ExpirationTime,
			CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy, UpdatedAt: t.UpdatedAt, Activated: active})
	}
	return out
}

// newToken is a token about to be created: its id and activation code.
type newToken struct {
	id, code string
}

const freshTokenKey = "sharing.fresh-token"

// drawToken draws a new token's id and activation code (on the leader,
// before proposing) and remembers them for the answer.
func drawToken(c echo.Context) newToken {
	t := newToken{id: uuid.NewString(), code: secret(24)}
	c.Set(freshTokenKey, t)
	return t
}

func secret(n int) string {
	raw := make([]byte, n)
	_, _ = rand.Read(raw)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// activationURL is where a token's profile is downloaded.
func (s *Server) activationURL(c echo.Context, code string) string {
	return httpapi.BaseURL(c) + ActivationPath + "/" + code
}

func (s *Server) recipientAnswer(c echo.Context, res fsm.Result) error {
	fresh := map[string]string{}
	if t, ok := c.Get(freshTokenKey).(newToken); ok {
		fresh[t.id] = s.activationURL(c, t.code)
	}
	return c.JSON(http.StatusOK, toRecipientInfo(res.Recipient, fresh))
}

type createRecipientBody struct {
	Name               *string `json:"name"`
	AuthenticationType string  `json:"authentication_type"`
	Comment            *string `json:"comment"`
	ExpirationTime     *int64  `json:"expiration_time"`
}

func (s *Server) buildCreateRecipient(in *httpapi.In[createRecipientBody]) (*fsm.CreateRecipient, error) {
	name, err := httpapi.RequiredName(in.Body.Name, "name")
	if err != nil {
		return nil, err
	}
	auth := strings.ToUpper(in.Body.AuthenticationType)
	if auth != "" && auth != "TOKEN" {
		return nil, httpapi.Invalid("authentication_type must be TOKEN, got %q", in.Body.AuthenticationType)
	}
	t := drawToken(in.Context)
	return &fsm.CreateRecipient{Stamp: in.Stamp, ID: uuid.NewString(), Name: name, Comment: in.Body.Comment,
		AuthenticationType: "TOKEN", TokenID: t.id, ActivationHash: HashSecret(t.code),
		ExpirationTime: s.expiration(in.Stamp.Time, in.Body.ExpirationTime)}, nil
}

// expiration is a new token's expiry: the one asked for, else the
// configured lifetime from now, else never (0).
func (s *Server) expiration(now int64, asked *int64) int64 {
	switch {
	case asked != nil:
		return *asked
	case s.cfg.TokenLifetime > 0:
		return now + s.cfg.TokenLifetime.Milliseconds()
	}
	return 0
}

func buildDeleteRecipient(in *httpapi.In[httpapi.NoBody]) (*fsm.DeleteRecipient, error) {
	return &fsm.DeleteRecipient{Stamp: in.Stamp, Name: in.Param("name")}, nil
}

type rotateBody struct {
	ExistingTokenExpireInSeconds *int64 `json:"existing_token_expire_in_seconds"`
}

func (s *Server) buildRotateToken(in *httpapi.In[rotateBody]) (*fsm.RotateRecipientToken, error) {
	secs := in.Body.ExistingTokenExpireInSeconds
	if secs == nil || *secs < 0 {
		return nil, httpapi.Invalid("existing_token_expire_in_seconds is required and must be zero or more")
	}
	t := drawToken(in.Context)
	return &fsm.RotateRecipientToken{Stamp: in.Stamp, Name: in.Param("name"), ExistingTokenExpireInSeconds: *secs,
		TokenID: t.id, ActivationHash: HashSecret(t.code), ExpirationTime: s.expiration(in.Stamp.Time, nil)}, nil
}

func (s *Server) listRecipients(c echo.Context) error {
	after, limit, err := ucrest.Page(c, 1000)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	name := func(r *fsm.Recipient) string { return strings.ToLower(r.Name) }
	all := s.core.IsAdmin(c, st)
	items := ownedPage(after, limit, st.Recipients, name, func(r *fsm.Recipient) bool {
		return all || s.core.Allowed(c, st, access.RecipientOwner(r.Name))
	})
	return c.JSON(http.StatusOK, ucrest.Listing("recipients", items, limit, name,
		func(r *fsm.Recipient) recipientInfo { return toRecipientInfo(r, nil) }))
}

func (s *Server) getRecipient(c echo.Context) error {
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	r, ok := st.Recipient(c.Param("name"))
	if !ok {
		return fsm.Errf(fsm.CodeRecipientNotFound, "Recipient not found: %s", httpapi.Clip(c.Param("name")))
	}
	return c.JSON(http.StatusOK, toRecipientInfo(r, nil))
}

// profile is the recipient's profile file.
type profile struct {
	ShareCredentialsVersion int    `json:"shareCredentialsVersion"`
	Endpoint                string `json:"endpoint"`
	BearerToken             string `json:"bearerToken"`
	ExpirationTime          string `json:"expirationTime,omitempty"`
}

const bearerKey = "sharing.bearer"

// buildActivate draws the bearer token a profile download hands out; the
// command records its hash against the activation code, once.
func (s *Server) buildActivate(in *httpapi.In[httpapi.NoBody]) (*fsm.ActivateRecipientToken, error) {
	token := secret(32)
	in.Set(bearerKey, token)
	return &fsm.ActivateRecipientToken{Stamp: in.Stamp, ActivationHash: HashSecret(in.Param("code")), BearerHash: HashSecret(token)}, nil
}

func (s *Server) profileAnswer(c echo.Context, res fsm.Result) error {
	hash := HashSecret(c.Param("code"))
	p := profile{ShareCredentialsVersion: 1, Endpoint: s.endpoint(c), BearerToken: c.Get(bearerKey).(string)}
	for _, t := range res.Recipient.Tokens {
		if t.ActivationHash == hash && t.ExpirationTime != 0 {
			p.ExpirationTime = time.UnixMilli(t.ExpirationTime).UTC().Format("2006-01-02T15:04:05.000Z")
		}
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="config.share"`)
	return c.JSON(http.StatusOK, p)
}
