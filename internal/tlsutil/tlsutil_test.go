package tlsutil_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/tlsutil"
)

func newCA(t *testing.T) (*tlsutil.CA, string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsutil.CreateCA(dir, "test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca, filepath.Join(dir, tlsutil.CACertFile)
}

func newCert(t *testing.T, ca *tlsutil.CA, name string, kind tlsutil.CertKind) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := ca.CreateCert(t.TempDir(), name, []string{"127.0.0.1"}, kind, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		t.Fatalf("%s: no PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serveTLS accepts TLS connections on loopback with cfg; each one that
// completes its handshake is sent "ok" and closed.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// exchange connects to addr with cfg and reads the server's "ok": an
// error means either side refused the handshake. It returns the server's
// certificate.
func exchange(addr string, cfg *tls.Config) (*x509.Certificate, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

func trusting(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	pool, err := tlsutil.LoadCAPool(caFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool.Pool(), ServerName: "127.0.0.1"}
}

func servedSerial(t *testing.T, addr string, cfg *tls.Config) *big.Int {
	t.Helper()
	leaf, err := exchange(addr, cfg)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return leaf.SerialNumber
}

// replace writes src over dst as a rotation does: a new file renamed into
// place. Its modification time is set a second past the old one's, as
// some file systems stamp two writes within one clock tick alike.
func replace(t *testing.T, src, dst string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeOver(t, dst, raw)
}

func writeOver(t *testing.T, dst string, raw []byte) {
	t.Helper()
	old, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	later := old.ModTime().Add(time.Second)
	if err := os.Chtimes(tmp, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// A certificate written over the files is served from the next handshake
// on, over a real TLS connection, without loading anything again.
func TestKeyPairReloadedOnNextHandshake(t *testing.T) {
	ca, caFile := newCA(t)
	certFile, keyFile := newCert(t, ca, "node", tlsutil.NodeCert)
	pair, err := tlsutil.LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, tlsutil.ServerConfig(pair, nil))
	client := trusting(t, caFile)
	if got, want := servedSerial(t, addr, client), readCert(t, certFile).SerialNumber; got.Cmp(want) != 0 {
		t.Fatalf("served serial %v, want %v", got, want)
	}
	newCertFile, newKeyFile := newCert(t, ca, "node", tlsutil.NodeCert)
	replace(t, newKeyFile, keyFile)
	replace(t, newCertFile, certFile)
	if got, want := servedSerial(t, addr, client), readCert(t, newCertFile).SerialNumber; got.Cmp(want) != 0 {
		t.Fatalf("after rotation: served serial %v, want the new %v", got, want)
	}
}

// A pair caught half written (a truncated certificate, then a new
// certificate whose key is not written yet) keeps the old one served; the
// complete new pair is served once it is there.
func TestHalfWrittenPairKeepsTheOldOne(t *testing.T) {
	ca, caFile := newCA(t)
	certFile, keyFile := newCert(t, ca, "node", tlsutil.NodeCert)
	pair, err := tlsutil.LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, tlsutil.ServerConfig(pair, nil))
	client := trusting(t, caFile)
	oldSerial := readCert(t, certFile).SerialNumber
	newCertFile, newKeyFile := newCert(t, ca, "node", tlsutil.NodeCert)
	newPEM, err := os.ReadFile(newCertFile)
	if err != nil {
		t.Fatal(err)
	}
	writeOver(t, certFile, newPEM[:len(newPEM)/2])
	if got := servedSerial(t, addr, client); got.Cmp(oldSerial) != 0 {
		t.Fatalf("a truncated certificate: served %v, want the old %v", got, oldSerial)
	}
	writeOver(t, certFile, newPEM)
	if got := servedSerial(t, addr, client); got.Cmp(oldSerial) != 0 {
		t.Fatalf("a new certificate with the old key: served %v, want the old %v", got, oldSerial)
	}
	replace(t, newKeyFile, keyFile)
	if got, want := servedSerial(t, addr, client), readCert(t, newCertFile).SerialNumber; got.Cmp(want) != 0 {
		t.Fatalf("the whole new pair: served %v, want %v", got, want)
	}
}

// With client CAs, the client port refuses a client without a
// certificate, or with one of another CA, and serves one the CA signed.
func TestServerConfigRequiresClientCertificate(t *testing.T) {
	ca, caFile := newCA(t)
	certFile, keyFile := newCert(t, ca, "node", tlsutil.NodeCert)
	pair, err := tlsutil.LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs, err := tlsutil.LoadCAPool(caFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, tlsutil.ServerConfig(pair, clientCAs))
	if _, err := exchange(addr, trusting(t, caFile)); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	foreign, _ := newCA(t)
	for _, signer := range []*tlsutil.CA{foreign, ca} {
		cfg := trusting(t, caFile)
		cfg.Certificates = []tls.Certificate{newPair(t, signer, "alice", tlsutil.ClientCert)}
		_, err := exchange(addr, cfg)
		if own := signer == ca; (err == nil) != own {
			t.Fatalf("client certificate (of the node's CA: %v): %v", own, err)
		}
	}
}

func loadPair(t *testing.T, certFile, keyFile string) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// newPair makes a certificate the CA signs and loads it for a client.
func newPair(t *testing.T, ca *tlsutil.CA, name string, kind tlsutil.CertKind) tls.Certificate {
	t.Helper()
	certFile, keyFile := newCert(t, ca, name, kind)
	return loadPair(t, certFile, keyFile)
}

func loadCluster(t *testing.T, caFile string, ca *tlsutil.CA) *tlsutil.Cluster {
	t.Helper()
	certFile, keyFile := newCert(t, ca, "node", tlsutil.NodeCert)
	c, err := tlsutil.LoadCluster(caFile, certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Nodes of one cluster CA talk; a node certificate of another CA is
// refused both when loaded and at the handshake, either way round.
func TestClusterRefusesForeignCA(t *testing.T) {
	ca, caFile := newCA(t)
	foreign, foreignFile := newCA(t)
	certFile, keyFile := newCert(t, foreign, "intruder", tlsutil.NodeCert)
	if _, err := tlsutil.LoadCluster(caFile, certFile, keyFile, nil); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a node certificate of another CA loaded: %v", err)
	}
	a, b, intruder := loadCluster(t, caFile, ca), loadCluster(t, caFile, ca), loadCluster(t, foreignFile, foreign)
	addr := serveTLS(t, a.ServerConfig())
	if _, err := exchange(addr, b.ClientConfig("127.0.0.1")); err != nil {
		t.Fatalf("a peer of the same CA: %v", err)
	}
	if _, err := exchange(addr, intruder.ClientConfig("127.0.0.1")); err == nil {
		t.Fatal("a peer of another CA was accepted")
	}
	if _, err := exchange(serveTLS(t, intruder.ServerConfig()), a.ClientConfig("127.0.0.1")); err == nil {
		t.Fatal("a node accepted a server of another CA")
	}
}

// expiredCert writes a node certificate the CA signed that expired an
// hour ago.
func expiredCert(t *testing.T, ca *tlsutil.CA) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "expired"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "expired.pem"), filepath.Join(dir, "expired-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, file, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The cluster port refuses an expired certificate and a client-only one
// (a certificate for the client port), when loaded and from a peer.
func TestClusterRefusesExpiredAndClientOnlyCertificates(t *testing.T) {
	ca, caFile := newCA(t)
	expCert, expKey := expiredCert(t, ca)
	clientCert, clientKey := newCert(t, ca, "alice", tlsutil.ClientCert)
	cases := []struct {
		name, cert, key, want string
	}{
		{"expired", expCert, expKey, "expired"},
		{"client-only", clientCert, clientKey, "not a node certificate"},
	}
	addr := serveTLS(t, loadCluster(t, caFile, ca).ServerConfig())
	for _, c := range cases {
		if _, err := tlsutil.LoadCluster(caFile, c.cert, c.key, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: LoadCluster: %v, want an error saying %q", c.name, err, c.want)
		}
		cfg := trusting(t, caFile)
		cfg.MinVersion, cfg.Certificates = tls.VersionTLS13, []tls.Certificate{loadPair(t, c.cert, c.key)}
		if _, err := exchange(addr, cfg); err == nil {
			t.Errorf("%s: a peer presenting it was accepted", c.name)
		}
	}
	cfg := trusting(t, caFile)
	cfg.Certificates = []tls.Certificate{newPair(t, ca, "peer", tlsutil.NodeCert)}
	if _, err := exchange(addr, cfg); err != nil {
		t.Fatalf("a peer with a node certificate: %v", err)
	}
}

// CreateCert names the hosts as DNS and IP SANs, makes node certificates
// for server and client authentication and client ones for the client
// only, ends them no later than the CA, and keeps the key private.
func TestCreateCertSANsAndKeyUsages(t *testing.T) {
	caDir := t.TempDir()
	ca, err := tlsutil.CreateCA(caDir, "test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if loaded, err := tlsutil.LoadCA(caDir); err != nil || !loaded.Cert.Equal(ca.Cert) {
		t.Fatalf("LoadCA: %v", err)
	}
	dir := t.TempDir()
	certFile, keyFile, err := ca.CreateCert(dir, "node1", []string{"node1.example", "127.0.0.1", "::1"}, tlsutil.NodeCert, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	node := readCert(t, certFile)
	if !slices.Equal(node.DNSNames, []string{"node1.example"}) || len(node.IPAddresses) != 2 ||
		!node.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !node.IPAddresses[1].Equal(net.ParseIP("::1")) {
		t.Fatalf("SANs: DNS %v, IP %v", node.DNSNames, node.IPAddresses)
	}
	checkUsages(t, node, x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth)
	if node.IsCA || node.NotAfter.After(ca.Cert.NotAfter) {
		t.Fatalf("node certificate: CA %v, ends %v after the CA's %v", node.IsCA, node.NotAfter, ca.Cert.NotAfter)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := node.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node1.example"}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	clientFile, _, err := ca.CreateCert(dir, "alice", nil, tlsutil.ClientCert, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	checkUsages(t, readCert(t, clientFile), x509.ExtKeyUsageClientAuth)
	if _, _, err := ca.CreateCert(dir, "bare", nil, tlsutil.NodeCert, time.Hour); err == nil {
		t.Fatal("a node certificate without hosts was made")
	}
	if _, _, err := ca.CreateCert(dir, "node1", []string{"x"}, tlsutil.NodeCert, time.Hour); err == nil || !strings.Contains(err.Error(), "refusing to replace") {
		t.Fatalf("writing over a certificate: %v", err)
	}
}

func checkUsages(t *testing.T, c *x509.Certificate, want ...x509.ExtKeyUsage) {
	t.Helper()
	if c.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(c.ExtKeyUsage, want) {
		t.Fatalf("%s: key usage %v, extended %v, want digital signature and %v", c.Subject.CommonName, c.KeyUsage, c.ExtKeyUsage, want)
	}
}
