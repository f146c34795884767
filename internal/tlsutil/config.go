package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// ServerConfig is the client port's TLS: TLS 1.2 at least, HTTP/2
// offered, and pair served as its files hold it at each handshake. With
// clientCAs, every client must present a certificate one of them signed.
func ServerConfig(pair *KeyPair, clientCAs *CAPool) *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return pair.Certificate(), nil }}
	if clientCAs == nil {
		return base
	}
	cfg := base.Clone()
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs.Pool()
		return c, nil
	}
	return cfg
}

// Cluster is mutual TLS between nodes: each node serves and presents its
// node certificate, and accepts only peers whose node certificate the
// cluster CA signed. A node certificate is one made for both server and
// client authentication; a client certificate (made for client
// authentication only) opens no connection between nodes.
type Cluster struct {
	pair *KeyPair
	ca   *CAPool
}

// LoadCluster reads the cluster CA and this node's certificate and key,
// and checks that the CA signed the certificate.
func LoadCluster(caFile, certFile, keyFile string, log *slog.Logger) (*Cluster, error) {
	ca, err := LoadCAPool(caFile, log)
	if err != nil {
		return nil, err
	}
	pair, err := LoadKeyPair(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	leaf, err := pair.Leaf()
	if err != nil {
		return nil, err
	}
	if err := verifyNode(leaf, nil, ca.Pool()); err != nil {
		return nil, fmt.Errorf("node certificate %s: %w", certFile, err)
	}
	warnExpiry(orDefault(log), certFile, leaf)
	return &Cluster{pair: pair, ca: ca}, nil
}

// ServerConfig is the cluster port's TLS: TLS 1.3, and a node
// certificate the cluster CA signed required of every peer.
func (c *Cluster) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.pair.Certificate(), nil },
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return c.serverConfig(), nil
		}}
}

func (c *Cluster) serverConfig() *tls.Config {
	pool := c.ca.Pool()
	return &tls.Config{MinVersion: tls.VersionTLS13, ClientAuth: tls.RequireAnyClientCert,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.pair.Certificate(), nil },
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyRaw(raw, pool)
		}}
}

// ClientConfig is the TLS of a connection this node opens to the peer
// serverName (the host of its cluster address): it presents this node's
// certificate and accepts only a node certificate of the cluster CA that
// names serverName.
func (c *Cluster) ClientConfig(serverName string) *tls.Config {
	pool := c.ca.Pool()
	return &tls.Config{MinVersion: tls.VersionTLS13, ServerName: serverName, RootCAs: pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.pair.Certificate(), nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("peer presented no certificate")
			}
			return verifyNode(cs.PeerCertificates[0], cs.PeerCertificates[1:], pool)
		}}
}

// verifyRaw verifies a peer's certificate chain as sent.
func verifyRaw(raw [][]byte, pool *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("peer presented no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return fmt.Errorf("peer certificate: %w", err)
		}
		certs[i] = c
	}
	return verifyNode(certs[0], certs[1:], pool)
}

// ErrNotNodeCert is a certificate made for client authentication only,
// presented where a node certificate is needed; the cluster port tells
// this refusal apart from a certificate of another CA.
var ErrNotNodeCert = errors.New("not a node certificate (made for client authentication only)")

// verifyNode checks that pool's CA signed leaf, that it is valid now, and
// that it is a node certificate: made for both server and client auth.
func verifyNode(leaf *x509.Certificate, intermediates []*x509.Certificate, pool *x509.CertPool) error {
	inter := x509.NewCertPool()
	for _, c := range intermediates {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("certificate %q: %w", leaf.Subject.CommonName, err)
	}
	for _, want := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if !slices.Contains(leaf.ExtKeyUsage, want) {
			return fmt.Errorf("certificate %q: %w", leaf.Subject.CommonName, ErrNotNodeCert)
		}
	}
	return nil
}

// expiryWarning is how long before its end a certificate is warned of.
const expiryWarning = 30 * 24 * time.Hour

func warnExpiry(log *slog.Logger, file string, leaf *x509.Certificate) {
	if left := time.Until(leaf.NotAfter); left < expiryWarning {
		log.Warn("certificate expires soon: make a new one and write it over the old files; it is picked up without a restart",
			"file", file, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}
