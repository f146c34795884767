package localcluster

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/raftcat/raftcat/internal/tlsutil"
)

// TLSDir is the directory in Options.Dir that holds a secure cluster's CA
// (ca.pem, ca-key.pem), node certificates (nodeN.pem, nodeN-key.pem) and
// gossip key (gossip.key).
const TLSDir = "tls"

// security is what a secure cluster's nodes and clients share.
type security struct {
	dir       string
	ca        *tlsutil.CA
	gossipKey string // file
	client    *tls.Config
}

// newSecurity makes the CA and the gossip key of a secure cluster.
func newSecurity(dir string) (*security, error) {
	dir = filepath.Join(dir, TLSDir)
	if err := os.RemoveAll(dir); err != nil { // an earlier run's CA signed other nodes
		return nil, err
	}
	ca, err := tlsutil.CreateCA(dir, "raftcat local cluster CA", tlsutil.DefaultCALifetime)
	if err != nil {
		return nil, fmt.Errorf("localcluster: make the CA: %w", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	gk := filepath.Join(dir, "gossip.key")
	if err := os.WriteFile(gk, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &security{dir: dir, ca: ca, gossipKey: gk, client: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, nil
}

// nodeFlags makes node name's certificate, valid for the host of its
// HTTP and raft addresses, and returns the flags that put every part of
// transport security on.
func (s *security) nodeFlags(name, httpAddr string) ([]string, error) {
	host, _, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return nil, err
	}
	cert, key, err := s.ca.CreateCert(s.dir, name, []string{host, "localhost"}, tlsutil.NodeCert, 24*time.Hour*30)
	if err != nil {
		return nil, fmt.Errorf("localcluster: certificate of %s: %w", name, err)
	}
	ca := filepath.Join(s.dir, tlsutil.CACertFile)
	return []string{"--tls-cert-file", cert, "--tls-key-file", key,
		"--cluster-tls-ca-file", ca, "--cluster-tls-cert-file", cert, "--cluster-tls-key-file", key,
		"--gossip-key-file", s.gossipKey}, nil
}

// CAFile is the CA certificate of a secure cluster ("" for another), for
// clients' --ca-file.
func (c *Cluster) CAFile() string {
	if c.sec == nil {
		return ""
	}
	return filepath.Join(c.sec.dir, tlsutil.CACertFile)
}

// ClientTLS is the TLS configuration that trusts a secure cluster's
// nodes (nil for another cluster).
func (c *Cluster) ClientTLS() *tls.Config {
	if c.sec == nil {
		return nil
	}
	return c.sec.client.Clone()
}

// Transport is an HTTP transport for the cluster's nodes: it trusts a
// secure cluster's CA.
func (c *Cluster) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = c.ClientTLS()
	t.MaxIdleConnsPerHost = 64
	return t
}
