package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/storage"
)

// The TLS flags come in the sets they work in, from flags or the
// environment.
func TestTLSFlagsValidated(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert-file", "c.pem"}, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"--tls-key-file", "k.pem"}, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"--tls-client-ca-file", "ca.pem"}, "--tls-client-ca-file needs --tls-cert-file and --tls-key-file"},
		{[]string{"--cluster-tls-ca-file", "ca.pem", "--cluster-tls-cert-file", "n.pem"}, "give all three or none"},
		{[]string{"--cluster-tls-key-file", "k.pem"}, "give all three or none"},
	} {
		if _, err := parse(t, c.args, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	cfg, err := parse(t, []string{"--tls-client-ca-file", "ca.pem", "--cluster-tls-ca-file", "ca.pem",
		"--cluster-tls-cert-file", "n.pem", "--cluster-tls-key-file", "n-key.pem"},
		map[string]string{"RAFTCAT_TLS_CERT_FILE": "c.pem", "RAFTCAT_TLS_KEY_FILE": "k.pem"})
	if err != nil {
		t.Fatal(err)
	}
	want := TLSConfig{CertFile: "c.pem", KeyFile: "k.pem", ClientCAFile: "ca.pem",
		ClusterCAFile: "ca.pem", ClusterCertFile: "n.pem", ClusterKeyFile: "n-key.pem"}
	if cfg.TLS != want {
		t.Fatalf("TLS config %+v, want %+v", cfg.TLS, want)
	}
}

// A node whose certificate files cannot be read does not start, and says
// which flag is wrong.
func TestTLSFilesMissingStopTheStart(t *testing.T) {
	dir := t.TempDir()
	cfg := TLSConfig{CertFile: filepath.Join(dir, "none.pem"), KeyFile: filepath.Join(dir, "none-key.pem")}
	if _, err := cfg.serverTLS(slog.Default()); err == nil || !strings.HasPrefix(err.Error(), "--tls-cert-file: ") {
		t.Fatalf("missing certificate: %v", err)
	}
	cfg = TLSConfig{ClusterCAFile: filepath.Join(dir, "ca.pem"), ClusterCertFile: "n.pem", ClusterKeyFile: "k.pem"}
	if _, err := cfg.clusterTLS(slog.Default()); err == nil || !strings.HasPrefix(err.Error(), "--cluster-tls-*: ") {
		t.Fatalf("missing cluster CA: %v", err)
	}
	if c, err := (&TLSConfig{}).serverTLS(slog.Default()); c != nil || err != nil {
		t.Fatalf("no TLS: %v %v", c, err)
	}
}

// The HTTP server's own error lines become warnings that carry the
// remote address, at most one a minute per remote IP; lines about no
// connection pass as they are.
func TestServerErrorLogCarriesRemoteAddress(t *testing.T) {
	var buf bytes.Buffer
	el := serverErrorLog(slog.New(slog.NewTextHandler(&buf, nil)))
	el.Print("http: TLS handshake error from 10.0.0.7:51234: client sent an HTTP request to an HTTPS server")
	el.Print("http: TLS handshake error from 10.0.0.7:51235: EOF")
	el.Print("http2: server: error reading preface from client [2001:db8::1]:4444: bogus greeting")
	el.Print("http: Accept error: too many open files; retrying in 5ms")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := [][]string{
		{"level=WARN", `msg="TLS handshake error"`, "remote_addr=10.0.0.7:51234", "remote_ip=10.0.0.7", `err="client sent an HTTP request to an HTTPS server"`},
		{"level=WARN", `msg="error reading preface"`, "remote_addr=[2001:db8::1]:4444", "remote_ip=2001:db8::1", `err="bogus greeting"`},
		{"level=WARN", `msg="HTTP server error"`, "too many open files"},
	}
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d (the second from 10.0.0.7 held back):\n%s", len(lines), len(want), buf.String())
	}
	for i, parts := range want {
		if !containsAll(lines[i], parts) {
			t.Errorf("line %d: %s\nwant it to hold %q", i, lines[i], parts)
		}
	}
}

// With authentication on, a node on a non-loopback address without TLS
// warns that tokens cross in the clear; with TLS, or on loopback, not.
func TestAuthWarnsOfTokensInTheClear(t *testing.T) {
	a := AuthConfig{Mode: "token"}
	for _, c := range []struct {
		addr  string
		tls   bool
		warns bool
	}{{"0.0.0.0:8080", false, true}, {"10.1.2.3:8080", true, false}, {"127.0.0.1:8080", false, false}} {
		var buf bytes.Buffer
		a.warn(slog.New(slog.NewTextHandler(&buf, nil)), c.addr, storage.StaticCredentials{}, c.tls)
		if got := strings.Contains(buf.String(), "in the clear"); got != c.warns {
			t.Errorf("%s, TLS %v: warned %v, want %v:\n%s", c.addr, c.tls, got, c.warns, buf.String())
		}
	}
}

// The client's TLS flags are checked before anything is sent.
func TestClientTLSFlagsChecked(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    clientOptions
		want string
	}{
		{clientOptions{caFile: notPEM}, "no PEM certificate"},
		{clientOptions{caFile: notPEM + ".missing"}, "--ca-file: "},
		{clientOptions{certFile: "c.pem"}, "--cert-file and --key-file go together"},
		{clientOptions{certFile: notPEM, keyFile: notPEM}, "--cert-file " + notPEM},
	} {
		if _, err := newClient(c.o, time.Second); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// serve --help shows the TLS flags with their variables; the commands
// that talk to a node show the client's; `raftcat tls` explains which
// flags take the files it makes.
func TestTLSHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	run([]string{"serve", "--help"}, &out, &errOut)
	for _, f := range []string{"--tls-cert-file [RAFTCAT_TLS_CERT_FILE]", "--tls-key-file [RAFTCAT_TLS_KEY_FILE]",
		"--tls-client-ca-file [RAFTCAT_TLS_CLIENT_CA_FILE]", "--cluster-tls-ca-file [RAFTCAT_CLUSTER_TLS_CA_FILE]",
		"--cluster-tls-cert-file [RAFTCAT_CLUSTER_TLS_CERT_FILE]", "--cluster-tls-key-file [RAFTCAT_CLUSTER_TLS_KEY_FILE]"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("serve --help lacks %s", f)
		}
	}
	for _, cmd := range [][]string{{"healthcheck"}, {"members"}, {"snapshot", "save"}, {"leave"}, {"auth", "whoami"}} {
		out.Reset()
		run(append(cmd, "--help"), &out, &errOut)
		if !containsAll(out.String(), []string{"RAFTCAT_CA_FILE", "RAFTCAT_CERT_FILE", "RAFTCAT_KEY_FILE", "RAFTCAT_TOKEN", "RAFTCAT_ADDR"}) {
			t.Errorf("%v --help lacks the client flags:\n%s", cmd, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"tls", "cert", "create", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("tls cert create --help: exit %d", code)
	}
	if !containsAll(out.String(), []string{"--tls-cert-file", "--cluster-tls-cert-file", "--client", "--cert-file and --key-file"}) {
		t.Errorf("tls cert create --help does not say which flags take the files:\n%s", out.String())
	}
	out.Reset()
	run([]string{"tls", "ca", "create", "--help"}, &out, &errOut)
	if !containsAll(out.String(), []string{"ca.pem", "ca-key.pem", "--cluster-tls-ca-file", "--tls-client-ca-file", "--ca-file"}) {
		t.Errorf("tls ca create --help does not say which flags take the files:\n%s", out.String())
	}
}
