package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/tlsutil"
)

// logBuffer collects log output from concurrent writers.
type logBuffer = logging.Capture

// logger logs everything, debug included, to a new buffer.
func logger() (*slog.Logger, *logBuffer) {
	logs := &logBuffer{}
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counted is a counter's value for one label value.
func counted(t *testing.T, c *prometheus.CounterVec, label string) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.WithLabelValues(label).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// testCA is a CA in a test's temp dir that makes certificates valid for
// the loopback address.
type testCA struct {
	dir string
	ca  *tlsutil.CA
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsutil.CreateCA(dir, name, tlsutil.DefaultCALifetime)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{dir: dir, ca: ca}
}

func (c *testCA) caFile() string { return filepath.Join(c.dir, tlsutil.CACertFile) }

// files makes a certificate for name in dir and returns its files.
func (c *testCA) files(t *testing.T, dir, name string, kind tlsutil.CertKind, lifetime time.Duration) (cert, key string) {
	t.Helper()
	cert, key, err := c.ca.CreateCert(dir, name, []string{"127.0.0.1", "localhost"}, kind, lifetime)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// node makes a node certificate for name and loads it as a node's
// cluster TLS, trusting caFile; it returns the certificate's files too.
func (c *testCA) node(t *testing.T, name, caFile string, log *slog.Logger) (*tlsutil.Cluster, string, string) {
	t.Helper()
	cert, key := c.files(t, c.dir, name, tlsutil.NodeCert, tlsutil.DefaultCertLifetime)
	sec, err := tlsutil.LoadCluster(caFile, cert, key, log)
	if err != nil {
		t.Fatal(err)
	}
	return sec, cert, key
}

// client is a TLS client presenting a new certificate of c (kind and
// lifetime as given) and trusting the CA trust.
func (c *testCA) client(t *testing.T, name string, kind tlsutil.CertKind, lifetime time.Duration, trust *testCA) *tls.Config {
	t.Helper()
	cert, key := c.files(t, c.dir, name, kind, lifetime)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: trust.pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
}

func (c *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.ca.Cert)
	return p
}

// bundle writes a CA file trusting every one of cas.
func bundle(t *testing.T, cas ...*testCA) string {
	t.Helper()
	var all []byte
	for _, c := range cas {
		b, err := os.ReadFile(c.caFile())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	path := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(path, all, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openPort opens a cluster port on loopback (sec nil: plaintext) that
// logs every refusal to the returned buffer.
func openPort(t *testing.T, sec *tlsutil.Cluster, handshake time.Duration) (*streamLayer, *logBuffer) {
	t.Helper()
	log, logs := logger()
	s, err := newStreamLayer("127.0.0.1:0", "", portConfig{tls: sec, log: log, refused: newRefusedCounter(), handshake: handshake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, logs
}

// oldTransport is raft's stock TCP transport: a node of a release before
// the cluster port, or one configured without TLS.
func oldTransport(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trans.Close() })
	return trans
}

// grantVotes answers every vote request trans receives until the test
// ends.
func grantVotes(t *testing.T, trans raft.Transport) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case rpc := <-trans.Consumer():
				rpc.Respond(&raft.RequestVoteResponse{Term: 7, Granted: true}, nil)
			case <-done:
				return
			}
		}
	}()
}

// requestVote sends a vote request of term 0 (which no node grants, so a
// request that got through changes nothing) from trans to addr.
func requestVote(trans raft.Transport, addr string) (raft.RequestVoteResponse, error) {
	var resp raft.RequestVoteResponse
	req := &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte("tester"), Addr: []byte(trans.LocalAddr())}}
	err := trans.RequestVote("target", raft.ServerAddress(addr), req, &resp)
	return resp, err
}

// exchange writes ping on from and pong back on to, checking both arrive.
func exchange(t *testing.T, from, to net.Conn) {
	t.Helper()
	for _, step := range []struct {
		w, r net.Conn
		msg  string
	}{{from, to, "ping"}, {to, from, "pong"}} {
		if _, err := step.w.Write([]byte(step.msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(step.msg))
		if _, err := io.ReadFull(step.r, got); err != nil || string(got) != step.msg {
			t.Fatalf("read %q, %v; want %q", got, err, step.msg)
		}
	}
}

// acceptOne accepts one connection from ln within a deadline.
func acceptOne(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		got <- c
	}()
	select {
	case c := <-got:
		if c == nil {
			t.Fatal("accept failed")
		}
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// Without TLS the cluster port speaks today's wire format: raft's stock
// transport (an older release) reaches raft through it, and peer HTTP
// connections go to the peer listener.
func TestPlaintextClusterPortServesOldRaftAndPeerHTTP(t *testing.T) {
	s, _ := openPort(t, nil, time.Second)
	trans := raft.NewNetworkTransport(s, 1, 2*time.Second, io.Discard)
	defer trans.Close()
	grantVotes(t, trans)
	if resp, err := requestVote(oldTransport(t), s.Addr().String()); err != nil || !resp.Granted {
		t.Fatalf("vote request from raft's stock transport: %+v %v", resp, err)
	}

	c, err := s.dialPeer(context.Background(), s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exchange(t, c, acceptOne(t, s.peer))
}

// With mutual TLS, raft's RPCs and peer HTTP pass between two nodes of
// the CA, and the peer connection shows the verified certificate.
func TestMutualTLSClusterPortCarriesRaftAndPeerHTTP(t *testing.T) {
	ca := newTestCA(t, "cluster")
	secA, _, _ := ca.node(t, "node-a", ca.caFile(), nil)
	secB, _, _ := ca.node(t, "node-b", ca.caFile(), nil)
	a, _ := openPort(t, secA, time.Second)
	b, logs := openPort(t, secB, time.Second)
	transA := raft.NewNetworkTransport(a, 1, 2*time.Second, io.Discard)
	defer transA.Close()
	transB := raft.NewNetworkTransport(b, 1, 2*time.Second, io.Discard)
	defer transB.Close()
	grantVotes(t, transB)
	if resp, err := requestVote(transA, b.Addr().String()); err != nil || !resp.Granted {
		t.Fatalf("vote request over mutual TLS: %+v %v", resp, err)
	}
	waitUntil(t, 5*time.Second, "the raft connection logged with its peer's name", func() bool {
		return len(logs.Lines("accepted a raft connection", "peer=node-a")) > 0
	})

	c, err := a.dialPeer(context.Background(), b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := acceptOne(t, b.peer)
	exchange(t, c, in)
	tc, ok := in.(*tls.Conn)
	if !ok {
		t.Fatalf("peer connection is a %T, want *tls.Conn", in)
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) == 0 || certs[0].Subject.CommonName != "node-a" {
		t.Fatalf("peer certificates %v, want node-a's", certs)
	}
}

// Every kind of bad connection is closed, logged with its reason and
// counted, and the port keeps serving the good ones.
func TestClusterPortRefusesBadConnections(t *testing.T) {
	ours, other := newTestCA(t, "cluster"), newTestCA(t, "other")
	sec, _, _ := ours.node(t, "node-a", ours.caFile(), nil)
	s, logs := openPort(t, sec, 10*time.Second)
	life := tlsutil.DefaultCertLifetime
	cases := []struct {
		name string
		want refusal
		peer string
		try  func(addr string) error
	}{
		{"raft over plaintext", refusedPlaintext, "", func(addr string) error { _, err := requestVote(oldTransport(t), addr); return err }},
		{"another CA", refusedUnknownCA, "intruder", dialTLS(other.client(t, "intruder", tlsutil.NodeCert, life, ours))},
		{"expired", refusedExpired, "stale", dialTLS(ours.client(t, "stale", tlsutil.NodeCert, time.Nanosecond, ours))},
		{"client certificate", refusedClientCert, "alice", dialTLS(ours.client(t, "alice", tlsutil.ClientCert, life, ours))},
		{"no certificate", refusedNoCert, "", dialTLS(&tls.Config{RootCAs: ours.pool(), ServerName: "127.0.0.1"})},
		{"peer trusts another CA", refusedByPeer, "", dialTLS(other.client(t, "stranger", tlsutil.NodeCert, life, other))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.try(s.Addr().String()); err == nil {
				t.Fatal("the connection got an answer")
			}
			waitUntil(t, 10*time.Second, "the refusal counted and logged with its reason and peer", func() bool {
				return counted(t, s.cfg.refused, tc.want.label) == 1 &&
					len(logs.Lines("level=WARN", "refused a cluster connection", tc.want.words, "peer="+tc.peer)) == 1
			})
		})
	}
	good, _, _ := ours.node(t, "node-b", ours.caFile(), nil)
	b, _ := openPort(t, good, time.Second)
	c, err := b.dialPeer(context.Background(), s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := acceptOne(t, s.peer)
	if name := peerName(in); name != "node-b" {
		t.Fatalf("first peer connection through came from %q, want node-b: a refused one got through", name)
	}
	exchange(t, c, in)
}

// dialTLS tries a peer HTTP connection with cfg and returns what
// stopped it: the handshake, or the port closing it before any answer.
func dialTLS(cfg *tls.Config) func(addr string) error {
	return func(addr string) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte{peerHTTPMarker, 'x'}); err != nil {
			return err
		}
		if _, err := c.Read(make([]byte, 1)); err != nil {
			return err
		}
		return nil
	}
}

// A connection that does not complete its TLS handshake in time is
// refused, and one that closes at once is not counted as a refusal.
func TestClusterPortTimesOutSilentConnections(t *testing.T) {
	ca := newTestCA(t, "cluster")
	sec, _, _ := ca.node(t, "node-a", ca.caFile(), nil)
	s, logs := openPort(t, sec, 200*time.Millisecond)
	probe, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	silent, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("silent connection read %v, want it closed", err)
	}
	waitUntil(t, 5*time.Second, "the timeout counted and logged", func() bool {
		return counted(t, s.cfg.refused, refusedTimeout.label) == 1 && len(logs.Lines("refused a cluster connection", refusedTimeout.words)) == 1
	})
	for _, r := range refusals {
		if r != refusedTimeout && counted(t, s.cfg.refused, r.label) != 0 {
			t.Fatalf("refused as %s too: the probe that closed at once is not a refusal", r.label)
		}
	}
}

// Refusals are logged at most once per remote per window, the next line
// saying how many were held back; other remotes are logged meanwhile.
func TestRefusalLogThrottlesPerRemote(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newRefusalLog(10*time.Second, func() time.Time { return now })
	step := func(remote string, wantLog bool, wantHeld int) {
		t.Helper()
		if logged, held := l.admit(remote); logged != wantLog || held != wantHeld {
			t.Fatalf("%s at %v: logged %v with %d held back, want %v with %d", remote, now, logged, held, wantLog, wantHeld)
		}
	}
	step("10.0.0.1", true, 0)
	step("10.0.0.1", false, 0)
	now = now.Add(9 * time.Second)
	step("10.0.0.1", false, 0)
	step("10.0.0.2", true, 0)
	now = now.Add(time.Second)
	step("10.0.0.1", true, 2)
	step("10.0.0.1", false, 0)
}

// A remote's refusals still throttle when the log is full of others, and
// past the window the oldest are forgotten to make room.
func TestRefusalLogForgetsOldRemotes(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newRefusalLog(time.Second, func() time.Time { return now })
	for i := range maxThrottled {
		l.admit(net.IPv4(10, 0, byte(i>>8), byte(i)).String())
	}
	if logged, _ := l.admit("192.0.2.1"); logged {
		t.Fatal("a new remote was logged with the log full of remotes inside their window")
	}
	now = now.Add(time.Second)
	if logged, _ := l.admit("192.0.2.1"); !logged {
		t.Fatal("a new remote was not logged once the others' window had passed")
	}
	if len(l.remotes) != 1 {
		t.Fatalf("%d remotes remembered, want the old ones forgotten", len(l.remotes))
	}
}
