package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"regexp"
	"strings"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/tlsutil"
)

// TLSConfig is the transport security of the client port (--tls-*) and
// of the cluster port (--cluster-tls-*).
type TLSConfig struct {
	CertFile     string
	KeyFile      string
	ClientCAFile string

	ClusterCAFile   string
	ClusterCertFile string
	ClusterKeyFile  string
}

func (t *TLSConfig) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&t.CertFile, "tls-cert-file", "", "serve HTTPS (TLS 1.2 or later, HTTP/2) on --http-addr with this certificate (PEM; a node certificate of 'raftcat tls cert create'); needs --tls-key-file. A certificate written over the files is served from the next handshake on, without a restart")
	fs.StringVar(&t.KeyFile, "tls-key-file", "", "private key (PEM) of --tls-cert-file")
	fs.StringVar(&t.ClientCAFile, "tls-client-ca-file", "", "require of every client of the HTTPS port a certificate one of these CAs (PEM bundle) signed, refusing the others at the handshake; needs --tls-cert-file")
	fs.StringVar(&t.ClusterCAFile, "cluster-tls-ca-file", "", "mutual TLS between nodes: the cluster CA (PEM) that signed every node's certificate; peers presenting any other are refused. Needs --cluster-tls-cert-file and --cluster-tls-key-file")
	fs.StringVar(&t.ClusterCertFile, "cluster-tls-cert-file", "", "this node's certificate (PEM) on the cluster port, signed by --cluster-tls-ca-file for both server and client authentication (a node certificate of 'raftcat tls cert create')")
	fs.StringVar(&t.ClusterKeyFile, "cluster-tls-key-file", "", "private key (PEM) of --cluster-tls-cert-file")
}

func (t *TLSConfig) validate() error {
	var errs []error
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file go together"))
	}
	if t.ClientCAFile != "" && t.CertFile == "" {
		errs = append(errs, errors.New("--tls-client-ca-file needs --tls-cert-file and --tls-key-file: client certificates are asked for in the TLS handshake"))
	}
	set := 0
	for _, f := range []string{t.ClusterCAFile, t.ClusterCertFile, t.ClusterKeyFile} {
		if f != "" {
			set++
		}
	}
	if set != 0 && set != 3 {
		errs = append(errs, errors.New("--cluster-tls-ca-file, --cluster-tls-cert-file and --cluster-tls-key-file go together: give all three or none"))
	}
	return errors.Join(errs...)
}

// load reads the certificate files: the client port's TLS configuration
// (nil: plain HTTP) and the cluster port's (nil: none).
func (t *TLSConfig) load(log *slog.Logger) (*tls.Config, *tlsutil.Cluster, error) {
	server, err := t.serverTLS(log)
	if err != nil {
		return nil, nil, err
	}
	cluster, err := t.clusterTLS(log)
	return server, cluster, err
}

// serverTLS is the client port's TLS configuration, with the files read
// again on the first handshake after they change; nil when the port
// serves plain HTTP.
func (t *TLSConfig) serverTLS(log *slog.Logger) (*tls.Config, error) {
	if t.CertFile == "" {
		return nil, nil
	}
	pair, err := tlsutil.LoadKeyPair(t.CertFile, t.KeyFile, log)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file: %w", err)
	}
	var clientCAs *tlsutil.CAPool
	if t.ClientCAFile != "" {
		if clientCAs, err = tlsutil.LoadCAPool(t.ClientCAFile, log); err != nil {
			return nil, fmt.Errorf("--tls-client-ca-file: %w", err)
		}
	}
	return tlsutil.ServerConfig(pair, clientCAs), nil
}

// clusterTLS is the cluster port's mutual TLS; nil without it.
func (t *TLSConfig) clusterTLS(log *slog.Logger) (*tlsutil.Cluster, error) {
	if t.ClusterCAFile == "" {
		return nil, nil
	}
	c, err := tlsutil.LoadCluster(t.ClusterCAFile, t.ClusterCertFile, t.ClusterKeyFile, log)
	if err != nil {
		return nil, fmt.Errorf("--cluster-tls-*: %w", err)
	}
	return c, nil
}

// httpListener is what the HTTP server serves on. With TLS it is Go's own
// TLS listener, not api.Listener: net/http needs the *tls.Conn itself to
// offer HTTP/2, fill r.TLS and refuse a plain-text request with its 400,
// and api.Listener's rewriting of Go's refusals works on plain text only.
func httpListener(ln net.Listener, api *httpapi.Server, cfg *tls.Config) net.Listener {
	if cfg == nil {
		return api.Listener(ln)
	}
	return tls.NewListener(ln, cfg)
}

// serverErrorLog is the HTTP server's own error log (failed TLS
// handshakes, among them a plain-text request to the HTTPS port and a
// client without the certificate required) bridged to slog at warn
// level. Lines about a connection carry its remote address and are
// throttled per remote IP, so that a scanner cannot flood the log.
func serverErrorLog(l *slog.Logger) *log.Logger {
	throttled := httpapi.Throttled(l, httpapi.FailureLogInterval, "remote_ip")
	return log.New(errorLogWriter{log: throttled}, "", 0)
}

// connLine matches net/http's lines about a connection, such as "http:
// TLS handshake error from 10.0.0.7:51234: EOF".
var connLine = regexp.MustCompile(`(?s)^(?:http2?: )?(?:server: )?(.+?) from (?:client )?(\S+?): (.*)$`)

type errorLogWriter struct{ log *slog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	m := connLine.FindStringSubmatch(line)
	if m == nil {
		w.log.Warn("HTTP server error", "err", line)
		return len(p), nil
	}
	ip, _, err := net.SplitHostPort(m[2])
	if err != nil {
		ip = m[2]
	}
	w.log.Warn(m[1], "remote_addr", m[2], "remote_ip", ip, "err", m[3])
	return len(p), nil
}
