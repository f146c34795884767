package sharing

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
)

// The URL signing key is replicated state: every node verifies with it,
// and rotating it (one command) retires every URL, page token and
// refresh token signed before. It is created on first use.

// signingKey returns the current key, creating it when the cluster has
// none yet. It runs on the leader (every protocol route does).
func (s *Server) signingKey(c echo.Context, st *fsm.State) (*fsm.URLSigningKey, error) {
	if k, ok := st.URLSigningKey(); ok {
		return k, nil
	}
	cmd := newKeyCommand(true)
	cmd.Stamp = fsm.Stamp{Time: time.Now().UnixMilli()}
	res, err := s.core.Propose(c, cmd)
	if err != nil {
		return nil, err
	}
	return res.SigningKey, nil // the key set, or the one a concurrent request set first
}

// newKeyCommand draws a fresh key (on the leader, before proposing).
func newKeyCommand(ifAbsent bool) *fsm.SetURLSigningKey {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	return &fsm.SetURLSigningKey{Key: base64.StdEncoding.EncodeToString(raw), IfAbsent: ifAbsent}
}

// sealer signs tokens of one purpose with one key: base64url(JSON
// payload) "." base64url(HMAC-SHA256(key, purpose "\n" payload)). The
// purpose keeps a token of one kind from passing as another. One sealer
// signs every URL of an answer, reusing its HMAC state. Not safe for
// concurrent use.
type sealer struct {
	purpose string
	mac     hash.Hash
	sum     []byte
}

func newSealer(k *fsm.URLSigningKey, purpose string) *sealer {
	key, _ := k.Bytes() // the state machine only accepts keys that decode
	return &sealer{purpose: purpose, mac: hmac.New(sha256.New, key)}
}

func (s *sealer) sign(body string) []byte {
	s.mac.Reset()
	s.mac.Write([]byte(s.purpose))
	s.mac.Write([]byte{'\n'})
	s.mac.Write([]byte(body))
	s.sum = s.mac.Sum(s.sum[:0])
	return s.sum
}

func (s *sealer) seal(payload any) string {
	raw, _ := gojson.Marshal(payload)
	body := base64.RawURLEncoding.EncodeToString(raw)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.sign(body))
}

// open verifies a sealed token and decodes its payload; false when it
// was not signed by this sealer's key for its purpose.
func (s *sealer) open(token string, payload any) bool {
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.sign(body)) {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	return err == nil && json.Unmarshal(raw, payload) == nil
}

func seal(k *fsm.URLSigningKey, purpose string, payload any) string {
	return newSealer(k, purpose).seal(payload)
}

func open(k *fsm.URLSigningKey, purpose, token string, payload any) bool {
	return newSealer(k, purpose).open(token, payload)
}

// decodeUnverified decodes a token's payload without checking its
// signature: only to learn which key it claims to be signed with.
func decodeUnverified(body string, payload any) bool {
	raw, err := base64.RawURLEncoding.DecodeString(body)
	return err == nil && json.Unmarshal(raw, payload) == nil
}
