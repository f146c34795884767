package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Lifetimes of what CreateCA and CreateCert make unless told otherwise.
const (
	DefaultCALifetime   = 10 * 365 * 24 * time.Hour
	DefaultCertLifetime = 365 * 24 * time.Hour
)

// The files of a CA directory.
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca-key.pem"
)

// backdate covers clocks a little behind the one that made a certificate.
const backdate = 5 * time.Minute

// CA is a certificate authority that signs certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// CreateCA makes a new CA (ECDSA P-256) named name and writes it to dir
// as ca.pem and ca-key.pem (the key readable by its owner only). It
// refuses to write over an existing CA.
func CreateCA(dir, name string, lifetime time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(name, lifetime)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if err := writePair(dir, CACertFile, CAKeyFile, der, key); err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key}, err
}

// LoadCA reads the CA CreateCA wrote to dir.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	cert, err := parsePEM(certPEM, "CERTIFICATE", x509.ParseCertificate)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", dir, err)
	}
	key, err := parsePEM(keyPEM, "PRIVATE KEY", parseSigner)
	if err != nil {
		return nil, fmt.Errorf("CA key %s: %w", dir, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", filepath.Join(dir, CACertFile))
	}
	return &CA{Cert: cert, Key: key}, nil
}

// CertKind is what a certificate is for.
type CertKind int

const (
	// NodeCert serves the client port and the cluster port and opens
	// connections to peers: server and client authentication.
	NodeCert CertKind = iota
	// ClientCert authenticates a client to the client port only.
	ClientCert
)

// CreateCert makes a certificate the CA signs for name, valid for hosts
// (DNS names and IP addresses; a node certificate needs at least one),
// and writes it to dir as NAME.pem and NAME-key.pem. It returns the two
// paths and refuses to write over existing files.
func (ca *CA) CreateCert(dir, name string, hosts []string, kind CertKind, lifetime time.Duration) (certFile, keyFile string, err error) {
	if kind == NodeCert && len(hosts) == 0 {
		return "", "", errors.New("a node certificate needs at least one host: the names and addresses peers and clients reach it at")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl, err := template(name, lifetime)
	if err != nil {
		return "", "", err
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if kind == NodeCert {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	addHosts(tmpl, hosts)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = name+".pem", name+"-key.pem"
	if err := writePair(dir, certFile, keyFile, der, key); err != nil {
		return "", "", err
	}
	return filepath.Join(dir, certFile), filepath.Join(dir, keyFile), nil
}

func addHosts(tmpl *x509.Certificate, hosts []string) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
}

func template(name string, lifetime time.Duration) (*x509.Certificate, error) {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("name %q: want a non-empty name without slashes (it names the files too)", name)
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("lifetime %s: want a positive duration", lifetime)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name, Organization: []string{"raftcat"}},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(lifetime)}, nil
}

// writePair writes a certificate and its key to dir, refusing to replace
// either; the key is readable by its owner only.
func writePair(dir, certName, keyName string, der []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{certName, keyName} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%s exists: refusing to replace it (move it away first)", filepath.Join(dir, f))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := writePEM(filepath.Join(dir, keyName), "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, certName), "CERTIFICATE", der, 0o644)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: kind, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func parsePEM[T any](b []byte, kind string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	block, _ := pem.Decode(b)
	if block == nil || block.Type != kind {
		return zero, fmt.Errorf("no PEM %s block", kind)
	}
	return parse(block.Bytes)
}

func parseSigner(der []byte) (crypto.Signer, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	return s, nil
}
