package httpapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/relay"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// peerNet stands in for the cluster port between the nodes of a test
// cluster (httpapi.Peers): each node listens on a loopback port of its
// own with mutual TLS under a CA made for the test, and is known to its
// peers by its raft address, as on the cluster port. It counts the
// connections made over it.
type peerNet struct {
	t              *testing.T
	server, client *tls.Config

	mu     sync.Mutex
	raftOf map[string]string // a node's HTTP address (as gossiped) → its raft address
	port   map[string]string // a raft address → the port its node's peers dial

	dials, accepted atomic.Int64
}

func newPeerNet(t *testing.T) *peerNet {
	t.Helper()
	caKey, key := newKey(t), newKey(t)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test cluster CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caCert := parseCert(t, ca, ca, caKey, caKey)
	node := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	cert := tls.Certificate{Certificate: [][]byte{parseCert(t, node, caCert, key, caKey).Raw}, PrivateKey: key}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &peerNet{t: t, raftOf: map[string]string{}, port: map[string]string{},
		server: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
			MinVersion: tls.VersionTLS13},
		client: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS13}}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// parseCert signs template with the parent's key.
func parseCert(t *testing.T, template, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// node is testcluster.Options.Peers: nd's side of the network.
func (pn *peerNet) node(nd *testcluster.Node) httpapi.Peers {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", pn.server)
	if err != nil {
		pn.t.Fatal(err)
	}
	pn.mu.Lock()
	pn.raftOf[strings.TrimPrefix(nd.URL, "http://")] = nd.RaftAddr()
	pn.port[nd.RaftAddr()] = ln.Addr().String()
	pn.mu.Unlock()
	return &testPeers{pn: pn, nd: nd, ln: countAccepted(ln, &pn.accepted)}
}

type testPeers struct {
	pn *peerNet
	nd *testcluster.Node
	ln net.Listener
}

func (p *testPeers) LeaderPeerAddr() (string, error) {
	httpAddr, err := p.nd.LeaderHTTPAddr()
	if err != nil {
		return "", err
	}
	p.pn.mu.Lock()
	defer p.pn.mu.Unlock()
	if raftAddr, ok := p.pn.raftOf[httpAddr]; ok {
		return raftAddr, nil
	}
	return "", fmt.Errorf("no cluster address known for %s", httpAddr)
}

func (p *testPeers) DialPeer(ctx context.Context, addr string) (net.Conn, error) {
	return p.pn.dial(ctx, addr)
}

// dial connects to the node whose raft address is addr, as a peer.
func (pn *peerNet) dial(ctx context.Context, addr string) (net.Conn, error) {
	pn.mu.Lock()
	port, ok := pn.port[addr]
	pn.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s is not a cluster address", addr)
	}
	pn.dials.Add(1)
	d := tls.Dialer{Config: pn.client}
	return d.DialContext(ctx, "tcp", port)
}

func (p *testPeers) PeerListener() net.Listener { return p.ln }

// acceptCounter counts the connections a listener accepts.
type acceptCounter struct {
	net.Listener
	n *atomic.Int64
}

func countAccepted(ln net.Listener, n *atomic.Int64) net.Listener {
	return &acceptCounter{Listener: ln, n: n}
}

func (l *acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// With Peers, every exchange between nodes goes over the cluster port:
// writes relayed, a download forwarded as a plain exchange, a streamed
// restore, the read index of follower reads, the status page's questions
// to the other members, a node's own request to the leader (leaving).
// The leader's HTTP port accepts no connection at all.
func TestPeersCarryEveryExchangeBetweenNodes(t *testing.T) {
	t.Parallel()
	pn := newPeerNet(t)
	httpConns := map[string]*atomic.Int64{"node1": {}, "node2": {}, "node3": {}}
	ac := startAuthClusterWith(t, testcluster.Options{FollowerReads: true, Heartbeat: 2 * time.Second, Peers: pn.node,
		HTTPListener: func(id string, ln net.Listener) net.Listener { return countAccepted(ln, httpConns[id]) }})
	leader := testcluster.Leader(t, ac.nodes)
	fs := testcluster.Followers(ac.nodes, leader)
	writer, reader := as(t, fs[0], adminToken), as(t, fs[1], adminToken)

	writer.must(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "over_peers"})
	r := reader.must(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/over_peers", nil)
	if by := r.header.Get(httpapi.HeaderServedBy); by != fs[1].ID() {
		t.Fatalf("read served by %q, want %s at the leader's read index", by, fs[1].ID())
	}
	testcluster.WaitFor(t, 10*time.Second, "the status page to reach every member", func() bool {
		members := arr(t, writer.must(http.StatusOK, http.MethodGet, "/ui/api/overview", nil).obj(t)["members"])
		reached := 0
		for _, m := range members {
			if objOf(t, m)["reachable"] == true {
				reached++
			}
		}
		return reached == len(ac.nodes)
	})
	snap := rawBody(t, writer.base+"/v1/cluster/snapshot", adminToken)
	restored := writer.call(http.MethodPost, "/v1/cluster/restore", snap, "Content-Type", "application/octet-stream")
	if restored.status != http.StatusOK || restored.obj(t)["restored"] != true {
		t.Fatalf("restore through %s: %d %s", fs[0].ID(), restored.status, restored.raw)
	}
	leave(t, reader, fs[1])

	if n := httpConns[leader.ID()].Load(); n != 0 {
		t.Fatalf("the leader's HTTP port accepted %d connections; peers must come over the cluster port only", n)
	}
	if pn.dials.Load() == 0 || pn.accepted.Load() == 0 {
		t.Fatalf("%d dials, %d connections accepted over the cluster port", pn.dials.Load(), pn.accepted.Load())
	}
	st := as(t, leader, adminToken).must(http.StatusOK, http.MethodGet, "/v1/cluster", nil).obj(t)
	if n := num(t, objOf(t, st["relay"])["requests"]); n == 0 {
		t.Fatal("no request was relayed to the leader")
	}
}

// leave takes follower nd out of the cluster through its own API (it
// asks the leader to remove it) and waits until it has stopped.
func leave(t *testing.T, a *authed, nd *testcluster.Node) {
	t.Helper()
	if left := a.must(http.StatusOK, http.MethodPost, "/v1/cluster/leave", map[string]any{}).obj(t); left["left"] != nd.ID() {
		t.Fatalf("leave answered %v", left)
	}
	testcluster.WaitFor(t, 30*time.Second, nd.ID()+" to stop", func() bool {
		select {
		case <-nd.Done():
			return true
		default:
			return false
		}
	})
	nd.MarkStopped()
}

// rawBody GETs url with a bearer token and returns its body.
func rawBody(t *testing.T, url, token string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %.200s", url, resp.StatusCode, err, body)
	}
	return body
}

// With Peers, the URLs the leader hands out keep the scheme the client
// used at the node it reached, though the leader gets the request over
// the cluster port's TLS; and the client port refuses what only peers
// send, even signed with the cluster key.
func TestPeersOverTheClusterPort(t *testing.T) {
	t.Parallel()
	pn := newPeerNet(t)
	ac := startAuthClusterWith(t, testcluster.Options{Peers: pn.node})
	leader := testcluster.Leader(t, ac.nodes)
	f := testcluster.Followers(ac.nodes, leader)[0]
	t.Run("URLs keep the entry scheme", func(t *testing.T) { entrySchemes(t, leader, f) })
	t.Run("the cluster port's TLS is not the client's", func(t *testing.T) { peerHopScheme(t, pn, leader) })
	t.Run("client port refuses peers", func(t *testing.T) { clientPortRefusals(t, ac, leader) })
}

func entrySchemes(t *testing.T, leader, f *testcluster.Node) {
	ts := httptest.NewTLSServer(f.Handler())
	t.Cleanup(ts.Close)
	overTLS := &authed{api: &api{t: t, base: ts.URL, client: ts.Client()}, token: adminToken}
	plain := as(t, f, adminToken)
	for _, c := range []struct {
		a    *authed
		base string
		hdr  []string
	}{
		{overTLS, ts.URL, nil},
		{plain, f.URL, nil},
		{plain, "https://" + strings.TrimPrefix(f.URL, "http://"), []string{"X-Forwarded-Proto", "https"}}, // a proxy in front
	} {
		r := c.a.call(http.MethodGet, icebergPrefix+"/v1/config", nil, c.hdr...)
		if r.status != http.StatusOK || r.header.Get(httpapi.HeaderServedBy) != leader.ID() {
			t.Fatalf("config through %s: %d, served by %q: %s", c.base, r.status, r.header.Get(httpapi.HeaderServedBy), r.raw)
		}
		if got, want := objOf(t, r.obj(t)["overrides"])["oauth2-server-uri"], c.base+icebergPrefix+"/v1/oauth/tokens"; got != want {
			t.Fatalf("oauth2-server-uri %v, want %s", got, want)
		}
	}
	rec := overTLS.must(http.StatusOK, http.MethodPost, apiPrefix+"/recipients", map[string]any{"name": "partner", "authentication_type": "TOKEN"})
	link := str(t, objOf(t, arr(t, rec.obj(t)["tokens"])[0])["activation_url"])
	if !strings.HasPrefix(link, ts.URL+apiPrefix+"/public/data_sharing_activation/") {
		t.Fatalf("activation URL %s, want it under %s", link, ts.URL)
	}
	prof := (&api{t: t, client: ts.Client()}).ok(http.StatusOK, http.MethodGet, link, nil)
	if got := prof.obj(t)["endpoint"]; got != ts.URL+sharingPrefix || prof.header.Get(httpapi.HeaderServedBy) != leader.ID() {
		t.Fatalf("profile endpoint %v (served by %q), want %s from the leader", got, prof.header.Get(httpapi.HeaderServedBy), ts.URL+sharingPrefix)
	}
}

// peerHopScheme sends the leader, over the cluster port, a request as a
// follower forwards it for a client that came in plain HTTP: the URL
// the leader builds is http, though the hop was TLS.
func peerHopScheme(t *testing.T, pn *peerNet, leader *testcluster.Node) {
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return pn.dial(ctx, addr)
	}}}
	uri := icebergPrefix + "/v1/config"
	signed := auth.Signed{Node: "node2", Method: http.MethodGet, URI: uri, Identity: &auth.Identity{Principal: "node:node2", Kind: auth.KindPeer}}
	r := (&api{t: t, base: "http://" + leader.RaftAddr(), client: client}).ok(http.StatusOK, http.MethodGet, uri, nil,
		"X-Raftcat-Forwarded", "node2", "X-Raftcat-Identity", signed.Envelope(),
		"X-Raftcat-Peer-Signature", auth.NewPeer(auth.DeriveClusterKey(adminToken)).Sign(signed, time.Now()))
	if got := str(t, objOf(t, r.obj(t)["overrides"])["oauth2-server-uri"]); !strings.HasPrefix(got, "http://") {
		t.Fatalf("oauth2-server-uri %s for a client that came in plain HTTP", got)
	}
}

func clientPortRefusals(t *testing.T, ac *authCluster, leader *testcluster.Node) {
	refused := func() float64 {
		return sum(scrapeAs(t, leader.URL, adminToken), "raftcat_peer_refusals_total", nil)
	}
	before := refused()
	key := auth.NewPeer(auth.DeriveClusterKey(adminToken))
	peer := &auth.Identity{Principal: "node:node2", Kind: auth.KindPeer}
	up := auth.Signed{Node: "node2", Method: http.MethodGet, URI: relay.Path, Identity: peer}
	raw := "GET " + relay.Path + " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: raftcat-relay/1\r\nX-Raftcat-Forwarded: node2\r\n" +
		"X-Raftcat-Identity: " + up.Envelope() + "\r\nX-Raftcat-Peer-Signature: " + key.Sign(up, time.Now()) + "\r\n\r\n"
	if status := rawExchangeStatus(t, leader.URL, raw); status != http.StatusForbidden {
		t.Fatalf("a signed relay upgrade on the client port: status %d, want 403", status)
	}
	if len(ac.log[leader.ID()].Lines("level=WARN", "relay connections come over the cluster port", "remote=127.0.0.1:", "claimed_node=node2")) != 1 {
		t.Fatal("the refused relay connection was not logged")
	}
	get := auth.Signed{Node: "node2", Method: http.MethodGet, URI: apiPrefix + "/catalogs", Identity: peer}
	r := as(t, leader, "").call(http.MethodGet, apiPrefix+"/catalogs", nil, "X-Raftcat-Forwarded", "node2",
		"X-Raftcat-Identity", get.Envelope(), "X-Raftcat-Peer-Signature", key.Sign(get, time.Now()))
	ucErr(t, r, http.StatusForbidden, "PERMISSION_DENIED", "cluster port")
	if n := refused() - before; n != 2 {
		t.Fatalf("%v peer refusals counted, want 2", n)
	}
	if len(ac.audit[leader.ID()].Lines(`"action":"GET /api/2.1/unity-catalog/catalogs"`, `"status":403`)) != 1 {
		t.Fatal("the refused request is not in the audit log")
	}
}
