package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// clientOptions are the flags of every command that talks to a node,
// besides --addr: its credential and its TLS.
type clientOptions struct {
	token    string
	caFile   string
	certFile string
	keyFile  string
}

func (o *clientOptions) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.token, "token", os.Getenv("RAFTCAT_TOKEN"), "API token sent as Authorization: Bearer, for a cluster run with --auth=token [RAFTCAT_TOKEN]")
	fs.StringVar(&o.caFile, "ca-file", os.Getenv("RAFTCAT_CA_FILE"), "CA certificate(s) (PEM) that signed the node's certificate, for an https:// --addr (default: the system's trusted CAs) [RAFTCAT_CA_FILE]")
	fs.StringVar(&o.certFile, "cert-file", os.Getenv("RAFTCAT_CERT_FILE"), "client certificate (PEM; 'raftcat tls cert create --client') for a node run with --tls-client-ca-file; needs --key-file [RAFTCAT_CERT_FILE]")
	fs.StringVar(&o.keyFile, "key-file", os.Getenv("RAFTCAT_KEY_FILE"), "private key (PEM) of --cert-file [RAFTCAT_KEY_FILE]")
}

// newClient is the HTTP client of every command that talks to a node:
// TLS 1.2 or later, trusting --ca-file's CAs (or the system's),
// presenting the client certificate if one is given, and sending the
// token with every request. Its errors say which flag a failure calls for.
func newClient(o clientOptions, timeout time.Duration) (*http.Client, error) {
	cfg, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	ct := cliTransport{token: o.token, certAsked: new(atomic.Bool)}
	if len(cfg.Certificates) == 0 {
		// With TLS 1.3 a node refuses a missing client certificate after
		// the client's side of the handshake is done: the request then
		// fails with a reset rather than the node's alert. That the node
		// asked for one is what tells the two apart.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			ct.certAsked.Store(true)
			return &tls.Certificate{}, nil
		}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	ct.base = t
	return &http.Client{Timeout: timeout, Transport: ct}, nil
}

func (o clientOptions) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", o.caFile)
		}
	}
	if (o.certFile == "") != (o.keyFile == "") {
		return nil, errors.New("--cert-file and --key-file go together")
	}
	if o.certFile != "" {
		pair, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert-file %s and --key-file %s: %w", o.certFile, o.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// cliTransport sends the token with every request, and turns the
// failures a wrong --addr scheme or missing TLS flag causes into errors
// that name the fix.
type cliTransport struct {
	token     string
	base      http.RoundTripper
	certAsked *atomic.Bool // a node asked for a client certificate this client has not
}

func (t cliTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token != "" && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil && t.certAsked.Load() {
		return nil, fmt.Errorf("%w: %s", err, needClientCert)
	}
	if err != nil {
		return nil, explainTLS(err)
	}
	if r.URL.Scheme == "http" && resp.StatusCode == http.StatusBadRequest {
		return plainToTLS(resp, r.URL.Host)
	}
	return resp, nil
}

const needClientCert = "the node requires a client certificate signed by its --tls-client-ca-file; pass it with --cert-file and --key-file"

// explainTLS adds to a failed TLS handshake what to do about it.
func explainTLS(err error) error {
	var unknownCA x509.UnknownAuthorityError
	var wrongHost x509.HostnameError
	var remote *net.OpError
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%w: the node's certificate is signed by a CA this client does not trust; pass that CA's certificate with --ca-file (or RAFTCAT_CA_FILE)", err)
	case errors.As(err, &wrongHost):
		return fmt.Errorf("%w: the node's certificate was not made for the host of --addr; use a name or address it names (raftcat tls cert create --host)", err)
	case errors.As(err, &remote) && remote.Op == "remote error" && strings.Contains(remote.Err.Error(), "certificate"):
		return fmt.Errorf("%w: %s", err, needClientCert)
	}
	return err
}

// httpsRefusal is the body of the answer Go's HTTPS server gives to a
// plain-text HTTP request.
const httpsRefusal = "Client sent an HTTP request to an HTTPS server"

// plainToTLS turns the 400 an HTTPS port answers a plain-text request
// with into an error naming the fix; any other 400 is returned whole.
func plainToTLS(resp *http.Response, host string) (*http.Response, error) {
	head := make([]byte, 256)
	n, _ := io.ReadFull(resp.Body, head)
	if bytes.Contains(head[:n], []byte(httpsRefusal)) {
		resp.Body.Close()
		return nil, fmt.Errorf("%s serves HTTPS: use --addr https://%s", host, host)
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head[:n]), resp.Body), resp.Body}
	return resp, nil
}
