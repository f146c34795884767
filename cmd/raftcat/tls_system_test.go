package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// tlsFiles are a CA and the certificates it signed, made with `raftcat
// tls`: a node certificate for 127.0.0.1 and a client certificate.
type tlsFiles struct {
	dir, ca               string
	nodeCert, nodeKey     string
	clientCert, clientKey string
}

func makeTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	f := tlsFiles{dir: dir, ca: filepath.Join(dir, "ca", "ca.pem"),
		nodeCert: filepath.Join(dir, "certs", "node1.pem"), nodeKey: filepath.Join(dir, "certs", "node1-key.pem"),
		clientCert: filepath.Join(dir, "certs", "alice.pem"), clientKey: filepath.Join(dir, "certs", "alice-key.pem")}
	ca := filepath.Join(dir, "ca")
	runTLSCmd(t, []string{f.ca, filepath.Join(ca, "ca-key.pem")}, "tls", "ca", "create", "--out", ca)
	runTLSCmd(t, []string{f.nodeCert, f.nodeKey},
		"tls", "cert", "create", "--ca", ca, "--name", "node1", "--host", "127.0.0.1,localhost", "--out", filepath.Join(dir, "certs"))
	runTLSCmd(t, []string{f.clientCert, f.clientKey},
		"tls", "cert", "create", "--ca", ca, "--name", "alice", "--client", "--out", filepath.Join(dir, "certs"))
	return f
}

// runTLSCmd runs a `raftcat tls` command that must print the paths of
// the files it wrote.
func runTLSCmd(t *testing.T, wrote []string, args ...string) {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("raftcat %v: exit %d: %s", args, code, errOut)
	}
	for _, f := range wrote {
		if !strings.Contains(out, f) {
			t.Fatalf("raftcat %v did not print %s: %q", args, f, out)
		}
	}
}

// httpsClient trusts the files' CA, presents the client certificate if
// withCert, and speaks HTTP/2 when the server offers it.
func (f tlsFiles) httpsClient(t *testing.T, withCert bool) *http.Client {
	t.Helper()
	cfg := f.clientTLS(t, withCert)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}

func (f tlsFiles) clientTLS(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(mustRead(t, f.ca)) {
		t.Fatal("no CA certificate in", f.ca)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if withCert {
		pair, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startTLSNode starts a single-node cluster serving HTTPS with the files'
// node certificate, and waits until client finds it ready.
func startTLSNode(t *testing.T, f tlsFiles, client *http.Client, extra ...string) *proc {
	t.Helper()
	ports := freePorts(t, 3)
	p := &proc{name: "tls-node", url: fmt.Sprintf("https://127.0.0.1:%d", ports[0]), client: client}
	p.args = append([]string{"serve", "--node-id", "node1", "--data-dir", t.TempDir(),
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms",
		"--tls-cert-file", f.nodeCert, "--tls-key-file", f.nodeKey}, extra...)
	p.start(t, raftcatBinary(t))
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("---- %s log ----\n%s", p.name, p.log.String())
		}
	})
	testcluster.WaitFor(t, 60*time.Second, "the node ready over HTTPS", p.ready)
	return p
}

func hostOf(url string) string { return strings.TrimPrefix(url, "https://") }

// waitForLog waits until the node's log has a line holding every part.
func waitForLog(t *testing.T, p *proc, what string, parts ...string) {
	t.Helper()
	testcluster.WaitFor(t, 10*time.Second, what, func() bool {
		for _, line := range strings.Split(p.log.String(), "\n") {
			if containsAll(line, parts) {
				return true
			}
		}
		return false
	})
}

func containsAll(s string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}

// A node started with the files `raftcat tls` makes serves HTTPS with
// HTTP/2; a plain-text request gets Go's 400, is logged with its remote
// address, and the port keeps serving. The CLI reaches it with --ca-file
// and --token, and says what is missing without --ca-file or with an
// http:// address.
func TestTLSNodeServesHTTP2AndRefusesPlainText(t *testing.T) {
	f := makeTLSFiles(t)
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	const admin = "tls-process-admin-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := f.httpsClient(t, false)
	p := startTLSNode(t, f, client, "--auth=token", "--admin-token-file", tokenFile)
	waitForLog(t, p, "the start logged with TLS on", `msg="serving HTTP"`, "tls=true", "client_certificates_required=false")
	resp, err := client.Get(p.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.TLS == nil {
		t.Fatalf("answered over %s (TLS %v), want HTTP/2 over TLS", resp.Proto, resp.TLS != nil)
	}

	local := plainTextRefused(t, hostOf(p.url))
	waitForLog(t, p, "the plain-text request logged with its remote address",
		`msg="TLS handshake error"`, "level=WARN", "remote_addr="+local, "client sent an HTTP request to an HTTPS server")
	if !p.ready() {
		t.Fatal("the node stopped serving HTTPS after a plain-text request")
	}

	testcluster.WaitFor(t, 30*time.Second, "members over HTTPS with --ca-file and --token", func() bool {
		code, out, _ := runCLI(t, "members", "--addr", p.url, "--ca-file", f.ca, "--token", admin)
		return code == 0 && strings.Contains(out, "leader")
	})
	if code, _, errOut := runCLI(t, "members", "--addr", p.url, "--token", admin); code != 1 || !strings.Contains(errOut, "pass that CA's certificate with --ca-file") {
		t.Fatalf("members without --ca-file: exit %d: %q", code, errOut)
	}
	plain := "http://" + hostOf(p.url)
	if code, _, errOut := runCLI(t, "members", "--addr", plain, "--token", admin); code != 1 || !strings.Contains(errOut, "serves HTTPS: use --addr https://"+hostOf(p.url)) {
		t.Fatalf("members with an http:// address: exit %d: %q", code, errOut)
	}
}

// plainTextRefused sends a plain-text HTTP request to an HTTPS address,
// checks that Go's server answers 400, and returns the connection's local
// address (the node's remote address for it).
func plainTextRefused(t *testing.T, hostport string) string {
	t.Helper()
	c, err := net.Dial("tcp", hostport)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /readyz HTTP/1.1\r\nHost: "+hostport+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("plain-text request: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTP request to an HTTPS server") {
		t.Fatalf("plain-text request: %d %q, want Go's 400", resp.StatusCode, body)
	}
	return c.LocalAddr().String()
}

// servedSerial is the serial number of the certificate a new TLS
// connection to hostport is served.
func servedSerial(t *testing.T, hostport string, cfg *tls.Config) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", hostport, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

func serialOf(t *testing.T, file string) *big.Int {
	t.Helper()
	block, _ := pem.Decode(mustRead(t, file))
	if block == nil {
		t.Fatal("no PEM in", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber
}

// A certificate written over the node's files (a new one from `raftcat
// tls cert create`, each file renamed into place) is served from the next
// handshake on, without a restart.
func TestTLSCertificateRotatedOnDiskIsServed(t *testing.T) {
	f := makeTLSFiles(t)
	p := startTLSNode(t, f, f.httpsClient(t, false))
	cfg := f.clientTLS(t, false)
	if got, want := servedSerial(t, hostOf(p.url), cfg), serialOf(t, f.nodeCert); got.Cmp(want) != 0 {
		t.Fatalf("served serial %v, want %v", got, want)
	}
	next := filepath.Join(f.dir, "next")
	runTLSCmd(t, nil, "tls", "cert", "create", "--ca", filepath.Join(f.dir, "ca"), "--name", "node1", "--host", "127.0.0.1", "--out", next)
	want := serialOf(t, filepath.Join(next, "node1.pem"))
	for _, name := range []string{"node1-key.pem", "node1.pem"} {
		if err := os.Rename(filepath.Join(next, name), filepath.Join(f.dir, "certs", name)); err != nil {
			t.Fatal(err)
		}
	}
	testcluster.WaitFor(t, 10*time.Second, "the new certificate served", func() bool {
		return servedSerial(t, hostOf(p.url), cfg).Cmp(want) == 0
	})
	waitForLog(t, p, "the reload logged", "reloaded certificate", f.nodeCert)
	if p.cmd.ProcessState != nil {
		t.Fatal("the node restarted")
	}
}

// With --tls-client-ca-file, a client without a certificate is refused
// at the handshake (and the refusal logged); one with a client
// certificate of the CA is served, and the CLI passes one with
// --cert-file and --key-file.
func TestTLSClientCertificateRequired(t *testing.T) {
	f := makeTLSFiles(t)
	p := startTLSNode(t, f, f.httpsClient(t, true), "--tls-client-ca-file", f.ca)
	waitForLog(t, p, "the start logged with client certificates required", `msg="serving HTTP"`, "tls=true", "client_certificates_required=true")

	local, err := withoutCertificate(hostOf(p.url), f.clientTLS(t, false))
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("a client without a certificate: %v, want a refusal at the handshake", err)
	}
	waitForLog(t, p, "the refusal logged with the remote address",
		`msg="TLS handshake error"`, "remote_addr="+local, "didn't provide a certificate")

	resp, err := f.httpsClient(t, true).Get(p.url + "/readyz")
	if err != nil {
		t.Fatalf("a client with a certificate: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("a client with a certificate: %d over %s", resp.StatusCode, resp.Proto)
	}
	if code, out, errOut := runCLI(t, "members", "--addr", p.url, "--ca-file", f.ca, "--cert-file", f.clientCert, "--key-file", f.clientKey); code != 0 || !strings.Contains(out, "leader") {
		t.Fatalf("members with a client certificate: exit %d: %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "members", "--addr", p.url, "--ca-file", f.ca); code != 1 || !strings.Contains(errOut, "pass it with --cert-file and --key-file") {
		t.Fatalf("members without a client certificate: exit %d: %q", code, errOut)
	}
}

// withoutCertificate connects to hostport presenting no client
// certificate and sends a request; it returns the connection's local
// address and how the exchange failed. (In TLS 1.3 the client finishes
// its side of the handshake first: the server's refusal arrives as the
// answer.)
func withoutCertificate(hostport string, cfg *tls.Config) (local string, err error) {
	raw, err := net.Dial("tcp", hostport)
	if err != nil {
		return "", err
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(raw, cfg)
	if _, err = io.WriteString(c, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
		_, err = c.Read(make([]byte, 1))
	}
	return raw.LocalAddr().String(), err
}
