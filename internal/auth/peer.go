package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Peers prove to each other that a request comes from a cluster member
// with a key every node holds (--cluster-secret-file, or derived from the
// admin token file). A forwarding node signs the request line, the node
// id it names, the identity it authenticated the caller as and the
// caller's address; the receiving node trusts that identity only when the
// signature verifies. Signatures carry their time and are refused outside
// a window of PeerSkew, which bounds replays.

// PeerSkew is how far a signature's time may be from the verifier's.
const PeerSkew = 2 * time.Minute

// Peer signs and verifies peer requests; a nil *Peer signs nothing and
// accepts nothing signed.
type Peer struct {
	key  []byte
	macs sync.Pool // of HMAC states keyed with key
}

// NewPeer returns a signer for the cluster key (nil for an empty key).
func NewPeer(key []byte) *Peer {
	if len(key) == 0 {
		return nil
	}
	return &Peer{key: key}
}

// DeriveClusterKey derives the cluster key from the admin token, for
// clusters that set no cluster secret.
func DeriveClusterKey(adminToken string) []byte {
	m := hmac.New(sha256.New, []byte("raftcat cluster key v1"))
	m.Write([]byte(adminToken))
	return m.Sum(nil)
}

// Signed is what a forwarded request carries, beside its signature.
type Signed struct {
	Node     string    // the forwarding node's id
	Method   string    // the request's method
	URI      string    // the request's URI (path and query)
	Identity *Identity // the caller, as the forwarding node authenticated it (nil: anonymous)
	Client   string    // the caller's address

	// env is the envelope as it was received or sealed: what is signed,
	// so that it is encoded once per request.
	env string
}

// Envelope is the header value carrying the identity and client address
// (base64url JSON).
func (s Signed) Envelope() string {
	if s.env != "" {
		return s.env
	}
	raw, _ := json.Marshal(envelope{Identity: s.Identity, Client: s.Client})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Seal encodes the envelope once; Envelope and signing then use it (the
// fields must not change after).
func (s *Signed) Seal() { s.env = s.Envelope() }

type envelope struct {
	Identity *Identity `json:"id,omitempty"`
	Client   string    `json:"c,omitempty"`
}

// ParseEnvelope decodes an envelope header into s.
func (s *Signed) ParseEnvelope(v string) error {
	if v == "" {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return err
	}
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return err
	}
	s.Identity, s.Client, s.env = e.Identity, e.Client, v
	return nil
}

// Sign returns the signature header value for s at now ("" for a nil
// *Peer).
func (p *Peer) Sign(s Signed, now time.Time) string {
	if p == nil {
		return ""
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	return ts + "." + base64.RawURLEncoding.EncodeToString(p.mac(ts, s))
}

// Verify checks a signature header value for s at now.
func (p *Peer) Verify(s Signed, sig string, now time.Time) error {
	if p == nil {
		return errors.New("this node has no cluster key")
	}
	ts, mac, ok := strings.Cut(sig, ".")
	if !ok {
		return errors.New("malformed peer signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("malformed peer signature time")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > PeerSkew || d < -PeerSkew {
		return fmt.Errorf("peer signature is %s away from this node's clock", d.Round(time.Second))
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || subtle.ConstantTimeCompare(got, p.mac(ts, s)) != 1 {
		return errors.New("peer signature does not verify with this cluster's key")
	}
	return nil
}

func (p *Peer) mac(ts string, s Signed) []byte {
	m, _ := p.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, p.key)
	}
	defer p.macs.Put(m)
	m.Reset()
	for _, part := range []string{"raftcat-peer-v1", ts, s.Node, s.Method, s.URI, s.Envelope()} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// equalSecret compares two secrets in constant time.
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}
