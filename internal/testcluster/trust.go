package testcluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// trusted is the CAs Do trusts besides the system's: those of the secure
// clusters tests started (TrustCA).
var trusted = struct {
	mu   sync.Mutex
	pool *x509.CertPool
}{pool: systemPool()}

func systemPool() *x509.CertPool {
	if p, err := x509.SystemCertPool(); err == nil {
		return p
	}
	return x509.NewCertPool()
}

// TrustCA makes Do (and Client) trust the CA certificate in file, so that
// tests reach the nodes of a cluster serving HTTPS with it.
func TrustCA(t testing.TB, file string) {
	t.Helper()
	pem, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	trusted.mu.Lock()
	defer trusted.mu.Unlock()
	pool := trusted.pool.Clone()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no PEM certificate", file)
	}
	trusted.pool = pool
}

// verifyTrusted verifies a server's certificate against the trusted CAs
// as they are at the handshake (the standard verification, with a pool
// that TrustCA may grow).
func verifyTrusted(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server presented no certificate")
	}
	trusted.mu.Lock()
	pool := trusted.pool
	trusted.mu.Unlock()
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: cs.ServerName})
	return err
}

// Client is the HTTP client Do sends with.
func Client() *http.Client { return client }

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true,
	MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
	// Verification is verifyTrusted's: the same checks, against a pool
	// that grows.
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true, VerifyConnection: verifyTrusted}}}
