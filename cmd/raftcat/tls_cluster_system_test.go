package main

// Mutual TLS between real node processes: a secure cluster (HTTPS, mutual
// TLS on the cluster port, encrypted gossip, authentication) relays
// followers' requests over the cluster port, refuses plaintext there,
// never makes a node of another CA a voter, serves a certificate rotated
// on disk on the next handshake, and brings a new node up to date by a
// snapshot installed over mutual TLS.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/localcluster"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/internal/tlsutil"
)

// secureCluster is a started secure cluster of processes and what tests
// need to reach it.
type secureCluster struct {
	*localcluster.Cluster
	dir    string
	bearer []string
}

func startSecureCluster(t *testing.T, flags ...string) *secureCluster {
	t.Helper()
	dir := t.TempDir()
	token := localcluster.NewToken()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := localcluster.Start(ctx, localcluster.Options{Bin: raftcatBinary(t), Dir: dir, Nodes: 3,
		AdminToken: token, Secure: true, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	sc := &secureCluster{Cluster: cl, dir: dir, bearer: testcluster.Bearer(token)}
	t.Cleanup(func() {
		cl.Stop()
		if t.Failed() {
			for _, n := range cl.Names() {
				b, _ := os.ReadFile(filepath.Join(dir, n+".log"))
				t.Logf("---- %s ----\n%s", n, tail(string(b), 40))
			}
		}
	})
	testcluster.TrustCA(t, cl.CAFile())
	return sc
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// view is node i's /v1/cluster.
func (sc *secureCluster) view(t *testing.T, i int) map[string]any {
	t.Helper()
	r := testcluster.Do(t, http.MethodGet, sc.URLs()[i]+"/v1/cluster", nil, sc.bearer...)
	if r.Status != http.StatusOK {
		t.Fatalf("/v1/cluster on node %d: %d %s", i+1, r.Status, r.Raw)
	}
	return r.Body
}

// leader is the index of the leading node.
func (sc *secureCluster) leader(t *testing.T) int {
	t.Helper()
	var at int
	testcluster.WaitFor(t, 30*time.Second, "a leader", func() bool {
		id, _ := sc.view(t, 0)["leader_id"].(string)
		at = slices.Index(sc.Names(), id)
		return at >= 0
	})
	return at
}

// raftAddr is node i's cluster (raft) address, as the members list it.
func (sc *secureCluster) raftAddr(t *testing.T, id string) string {
	t.Helper()
	for _, m := range sc.view(t, 0)["members"].([]any) {
		if m := m.(map[string]any); m["id"] == id {
			return m["raft_addr"].(string)
		}
	}
	t.Fatalf("no member %s", id)
	return ""
}

func (sc *secureCluster) log(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sc.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commitThrough creates a managed table through node i and commits
// versions 1..n to it through node j.
func (sc *secureCluster) commitThrough(t *testing.T, i, j int, name string, n int) {
	t.Helper()
	id := testcluster.CreateManaged(t, sc.URLs()[i], sc.URLs()[i], "unity", "default", name, sc.bearer...)
	path := testcluster.TablePath("unity", "default", name)
	for v := 1; v <= n; v++ {
		r := testcluster.Do(t, http.MethodPost, sc.URLs()[j]+path, testcluster.CommitBody(id, int64(v), testcluster.StagedName(int64(v), name)), sc.bearer...)
		if r.Status != http.StatusOK {
			t.Fatalf("commit %s v%d through node %d: %d %s", name, v, j+1, r.Status, r.Raw)
		}
	}
}

func TestSecureClusterOfProcesses(t *testing.T) {
	sc := startSecureCluster(t, "--snapshot-threshold", "16", "--trailing-logs", "8", "--snapshot-interval", "250ms")
	lead := sc.leader(t)
	f1, f2 := (lead+1)%3, (lead+2)%3

	// Followers relay over the cluster port: the leader counts relayed
	// requests, and commits through them succeed.
	sc.commitThrough(t, f1, f2, "relayed", 3)
	if n := metricValue(t, sc.URLs()[lead], sc.bearer, "raftcat_relay_requests_total"); n == 0 {
		t.Fatal("the leader served no relayed request")
	}

	// The leader's health checks reach every member over mutual TLS.
	testcluster.WaitFor(t, 30*time.Second, "autopilot to find every server healthy", func() bool {
		ap, _ := sc.view(t, lead)["autopilot"].(map[string]any)
		return ap["healthy"] == true && ap["failure_tolerance"] == float64(1)
	})

	// Nothing between nodes goes to a client port, where it would meet
	// HTTPS unprepared.
	defer func() {
		for _, n := range sc.Names() {
			if l := sc.log(t, n); strings.Contains(l, "client sent an HTTP request to an HTTPS server") {
				t.Errorf("%s was sent plain HTTP:\n%s", n, tail(l, 20))
			}
		}
	}()

	t.Run("plaintext to the cluster port", func(t *testing.T) {
		addr := sc.raftAddr(t, sc.Names()[f1])
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte{0, 1, 2, 3, 'p', 'l', 'a', 'i', 'n'})
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 64)); err == nil {
			t.Fatalf("the cluster port answered %d bytes to plaintext", n)
		}
		c.Close()
		testcluster.WaitFor(t, 10*time.Second, "the refusal in the log", func() bool {
			l := sc.log(t, sc.Names()[f1])
			return strings.Contains(l, "refused a cluster connection") && strings.Contains(l, "spoke plaintext")
		})
		sc.commitThrough(t, f1, f1, "afterplain", 1)
	})

	t.Run("a node of another CA", func(t *testing.T) {
		intruder := startIntruder(t, sc)
		defer func() {
			if t.Failed() {
				t.Logf("---- intruder ----\n%s", tail(intruder.String(), 30))
			}
		}()
		testcluster.WaitFor(t, 60*time.Second, "the leader to refuse to add the intruder", func() bool {
			return strings.Contains(sc.log(t, sc.Names()[sc.leader(t)]), "not adding a voter")
		})
		for _, m := range sc.view(t, lead)["members"].([]any) {
			if m := m.(map[string]any); m["id"] == "intruder" && m["voter"] == true {
				t.Fatalf("the intruder is a voter: %v", m)
			}
		}
		sc.commitThrough(t, f2, f1, "withintruder", 2)
		if l := intruder.String(); strings.Contains(l, "leader ready") || strings.Contains(l, "installed snapshot") {
			t.Fatalf("the intruder took part:\n%s", tail(l, 30))
		}
	})

	t.Run("a certificate rotated on disk", func(t *testing.T) {
		name := sc.Names()[f2]
		addr := sc.raftAddr(t, name)
		before := clusterPortSerial(t, sc, addr)
		rotateCert(t, sc, name)
		testcluster.WaitFor(t, 10*time.Second, "the new certificate on the next handshake", func() bool {
			return clusterPortSerial(t, sc, addr) != before
		})
		sc.commitThrough(t, f2, f2, "rotated", 2)
	})

	t.Run("a snapshot installed over mutual TLS", func(t *testing.T) {
		for i := range 8 {
			sc.commitThrough(t, lead, f1, fmt.Sprintf("compacted%d", i), 4)
		}
		i, err := sc.Add()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sc.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		testcluster.WaitFor(t, 60*time.Second, "the new node to catch up", func() bool {
			r := testcluster.Do(t, http.MethodGet, sc.URLs()[i]+"/v1/cluster", nil, sc.bearer...)
			restores, _ := r.Body["snapshot_restores"].(float64)
			return r.Status == http.StatusOK && restores > 0
		})
		load := testcluster.Do(t, http.MethodGet, sc.URLs()[i]+testcluster.TablePath("unity", "default", "compacted7"), nil,
			append(sc.bearer, "X-Raftcat-Consistency", "stale")...)
		if load.Status != http.StatusOK {
			t.Fatalf("the new node's own state: %d %s", load.Status, load.Raw)
		}
	})
}

// metricValue is the sum of a metric's samples on the node at url.
func metricValue(t *testing.T, url string, bearer []string, name string) float64 {
	t.Helper()
	r := testcluster.Do(t, http.MethodGet, url+"/metrics", nil, bearer...)
	sum := 0.0
	for _, line := range strings.Split(string(r.Raw), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// startIntruder starts a node with the cluster's gossip key and admin
// token but a certificate another CA signed; its log is returned.
func startIntruder(t *testing.T, sc *secureCluster) *logBuffer {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsutil.CreateCA(filepath.Join(dir, "ca"), "another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.CreateCert(dir, "intruder", []string{"127.0.0.1"}, tlsutil.NodeCert, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// It trusts the cluster's CA as well as its own (the cluster's CA
	// certificate is no secret), so that it starts and tries.
	tlsDir := filepath.Join(sc.dir, localcluster.TLSDir)
	bundle := filepath.Join(dir, "bundle.pem")
	var pems []byte
	for _, f := range []string{filepath.Join(tlsDir, tlsutil.CACertFile), filepath.Join(dir, "ca", tlsutil.CACertFile)} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pems = append(pems, b...)
	}
	if err := os.WriteFile(bundle, pems, 0o644); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	cmd := exec.Command(raftcatBinary(t), "serve", "--node-id", "intruder", "--data-dir", filepath.Join(dir, "data"),
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--join", strings.Join(sc.GossipAddrs(), ","),
		"--bootstrap-expect", "3", "--auth=token", "--admin-token-file", filepath.Join(sc.dir, localcluster.AdminTokenFile),
		"--tls-cert-file", cert, "--tls-key-file", key, "--cluster-tls-ca-file", bundle,
		"--cluster-tls-cert-file", cert, "--cluster-tls-key-file", key, "--gossip-key-file", filepath.Join(tlsDir, "gossip.key"))
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return log
}

// clusterPortSerial is the serial of the certificate the cluster port at
// addr presents, to a client holding a node certificate of the cluster.
func clusterPortSerial(t *testing.T, sc *secureCluster, addr string) string {
	t.Helper()
	tlsDir := filepath.Join(sc.dir, localcluster.TLSDir)
	pair, err := tls.LoadX509KeyPair(filepath.Join(tlsDir, "node1.pem"), filepath.Join(tlsDir, "node1-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(sc.CAFile())
	pool.AppendCertsFromPEM(pem)
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// rotateCert writes a new certificate of the cluster's CA over node
// name's files.
func rotateCert(t *testing.T, sc *secureCluster, name string) {
	t.Helper()
	tlsDir := filepath.Join(sc.dir, localcluster.TLSDir)
	ca, err := tlsutil.LoadCA(tlsDir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cert, key, err := ca.CreateCert(tmp, name, []string{"127.0.0.1", "localhost"}, tlsutil.NodeCert, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{key: name + "-key.pem", cert: name + ".pem"} {
		if err := os.Rename(from, filepath.Join(tlsDir, to)); err != nil {
			t.Fatal(err)
		}
	}
}
