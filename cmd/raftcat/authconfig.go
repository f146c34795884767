package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/storage"
)

// AuthConfig is how a node authenticates callers and its peers.
type AuthConfig struct {
	Mode              string
	AdminTokenFile    string
	ClusterSecretFile string
	AuditLog          string
	OIDC              auth.OIDC
}

func (a *AuthConfig) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&a.Mode, "auth", "none", "who may call the API: none (anyone, as anyone; for a single node on loopback) or token (every API route needs a credential: an API token, an OAuth2 access token or an OIDC JWT; /healthz and /readyz stay open, Delta Sharing recipients keep their own tokens)")
	fs.StringVar(&a.AdminTokenFile, "admin-token-file", "", "file holding the admin token: at the cluster's first start with --auth=token, it becomes the token of the metastore admin principal \"admin\" (give every node the same file)")
	fs.StringVar(&a.ClusterSecretFile, "cluster-secret-file", "", "file holding the key nodes sign the requests they forward to each other with, so that no client can pass for a peer (default: derived from --admin-token-file; every node needs the same)")
	fs.StringVar(&a.AuditLog, "audit-log", "", "write one JSON line per write and per refused request to this file (- for standard output); lines name principals, never tokens")
	fs.StringVar(&a.OIDC.Issuer, "oidc-issuer", "", "accept JWTs of this OpenID Connect issuer (its exact iss); needs --oidc-audience and --oidc-jwks-file or --oidc-jwks-url")
	fs.StringVar(&a.OIDC.Audience, "oidc-audience", "", "the aud an OIDC JWT must carry")
	fs.StringVar(&a.OIDC.JWKSFile, "oidc-jwks-file", "", "file with the OIDC issuer's public keys (a JWKS document)")
	fs.StringVar(&a.OIDC.JWKSURL, "oidc-jwks-url", "", "URL of the OIDC issuer's public keys (a JWKS document, fetched and refreshed as keys change)")
	fs.StringVar(&a.OIDC.PrincipalClaim, "oidc-principal-claim", "sub", "the OIDC JWT claim that names the principal")
}

func (a *AuthConfig) validate() error {
	var errs []error
	if a.Mode != string(auth.ModeNone) && a.Mode != string(auth.ModeToken) {
		errs = append(errs, fmt.Errorf("--auth %q: want none or token", a.Mode))
	}
	if a.OIDC.Issuer != "" && (a.OIDC.Audience == "" || (a.OIDC.JWKSFile == "") == (a.OIDC.JWKSURL == "")) {
		errs = append(errs, errors.New("--oidc-issuer needs --oidc-audience and one of --oidc-jwks-file and --oidc-jwks-url"))
	}
	if a.OIDC.Issuer == "" && (a.OIDC.Audience != "" || a.OIDC.JWKSFile != "" || a.OIDC.JWKSURL != "") {
		errs = append(errs, errors.New("the --oidc-* flags need --oidc-issuer"))
	}
	return errors.Join(errs...)
}

// readSecretFile reads a token or key file: its content without the
// line ending, which may not be empty.
func readSecretFile(flagName, path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flagName, err)
	}
	v := strings.TrimSpace(string(raw))
	if len(v) < 16 {
		return "", fmt.Errorf("--%s %s: the secret must be at least 16 characters long", flagName, path)
	}
	return v, nil
}

// nodeAuth is what a node's HTTP layer authenticates with.
type nodeAuth struct {
	authn      *auth.Authenticator
	peer       *auth.Peer
	adminToken string
	audit      io.Writer
	closeAudit func()
}

// build reads the files and builds the authenticator and peer signer.
func (a *AuthConfig) build() (*nodeAuth, error) {
	n := &nodeAuth{closeAudit: func() {}}
	var err error
	if a.AdminTokenFile != "" {
		if n.adminToken, err = readSecretFile("admin-token-file", a.AdminTokenFile); err != nil {
			return nil, err
		}
	}
	if a.Mode == string(auth.ModeToken) && n.adminToken == "" {
		return nil, errors.New("--auth=token needs --admin-token-file (the token the metastore admin starts with)")
	}
	key := []byte(nil)
	switch {
	case a.ClusterSecretFile != "":
		secret, err := readSecretFile("cluster-secret-file", a.ClusterSecretFile)
		if err != nil {
			return nil, err
		}
		key = []byte(secret)
	case n.adminToken != "":
		key = auth.DeriveClusterKey(n.adminToken)
	}
	n.peer = auth.NewPeer(key)
	cfg := auth.Config{Mode: auth.Mode(a.Mode), AdminToken: n.adminToken}
	if a.OIDC.Issuer != "" {
		o := a.OIDC
		cfg.OIDC = &o
	}
	if n.authn, err = auth.New(cfg); err != nil {
		return nil, err
	}
	return n, a.openAudit(n)
}

func (a *AuthConfig) openAudit(n *nodeAuth) error {
	switch a.AuditLog {
	case "":
		return nil
	case "-":
		n.audit = os.Stdout
		return nil
	}
	f, err := os.OpenFile(a.AuditLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("--audit-log: %w", err)
	}
	n.audit, n.closeAudit = f, func() { _ = f.Close() }
	return nil
}

// apply puts the authentication into the HTTP layer's configuration.
func (n *nodeAuth) apply(hc *httpapi.Config) {
	hc.Auth, hc.Peer, hc.Audit = n.authn, n.peer, n.audit
}

// warn logs what an operator should know about the node's exposure;
// tlsOn tells whether the HTTP port serves HTTPS.
func (a *AuthConfig) warn(log *slog.Logger, httpAddr string, creds storage.StaticCredentials, tlsOn bool) {
	if a.Mode != string(auth.ModeNone) {
		log.Info("authentication on: every API route needs a credential", "auth", a.Mode, "oidc_issuer", a.OIDC.Issuer)
		if creds.S3AccessKeyID != "" && creds.ReadOnly == nil {
			log.Warn("no read-only S3 keys (--s3-read-access-key-id): principals with SELECT but not MODIFY are vended the read-write --s3-access-key-id")
		}
		if !tlsOn && !onLoopback(httpAddr) {
			log.Warn("--auth=token without TLS on a non-loopback address: tokens and vended storage credentials cross the network to " + httpAddr +
				" in the clear; serve HTTPS with --tls-cert-file and --tls-key-file (or put a TLS proxy in front of every node)")
		}
		return
	}
	if !onLoopback(httpAddr) {
		log.Warn("--auth=none on a non-loopback address: anyone who can reach " + httpAddr +
			" may read and change every table, drop catalogs, download backups and restore them; start every node with --auth=token --admin-token-file FILE")
	}
}

// onLoopback reports whether a listen address (host:port) is reachable
// from this machine only.
func onLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err != nil || isLoopback(host)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
