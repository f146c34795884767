package sharing_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

func TestTokensGrantsAndRotation(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	for _, auth := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic abc"}} {
		r := testcluster.Do(t, http.MethodGet, l.prof.Endpoint+"/shares", nil, auth...)
		expectError(t, 401, "UNAUTHENTICATED", r.Status, string(r.Raw))
		if strings.Contains(string(r.Raw), "lake") {
			t.Fatalf("401 leaks a share name: %s", r.Raw)
		}
	}
	// A profile is downloaded once.
	created := ok(t, 200, http.MethodPost, l.nodes[0].URL+uc+"/recipients", map[string]any{"name": "bob"})
	act := activationURL(t, created)
	bob := download(t, act)
	again := testcluster.Do(t, http.MethodGet, act, nil)
	if again.Status != 400 || !strings.Contains(string(again.Raw), "already") {
		t.Fatalf("second download: %d %s", again.Status, again.Raw)
	}
	if info := ok(t, 200, http.MethodGet, l.nodes[2].URL+uc+"/recipients/bob", nil); strings.Contains(string(info.Raw), bob.BearerToken) ||
		strings.Contains(string(info.Raw), act) || info.Body["activated"] != true {
		t.Fatalf("recipient shows a secret or is not activated: %s", info.Raw)
	}
	// Ungranted, then granted, then revoked: every node agrees at once.
	bc := bob.client(t)
	if r := bc.get("/shares/lake"); r.Status != 404 {
		t.Fatalf("ungranted share: %d %s", r.Status, r.Raw)
	}
	l.prov.grant("lake", "bob")
	for i := range l.nodes {
		p := bob
		p.Endpoint = strings.Replace(p.Endpoint, l.nodes[0].URL, l.nodes[i].URL, 1)
		if r := p.client(t).get("/shares/lake"); r.Status != 200 {
			t.Fatalf("node %d after grant: %d %s", i, r.Status, r.Raw)
		}
	}
	l.prov.revoke("lake", "bob")
	for i := range l.nodes {
		p := bob
		p.Endpoint = strings.Replace(p.Endpoint, l.nodes[0].URL, l.nodes[i].URL, 1)
		a := p.client(t).query(tablePath("lake", "golden", "simple_table"), map[string]any{})
		expectError(t, 404, "RESOURCE_DOES_NOT_EXIST", a.status, a.raw)
		stale := p.client(t) // asking for a stale read does not get around it
		stale.headers = []string{"X-Raftcat-Consistency", "stale"}
		if r := stale.get("/shares/lake"); r.Status != 404 {
			t.Fatalf("node %d: a stale read after the revoke: %d %s", i, r.Status, r.Raw)
		}
	}
	// Rotation: the old token expires at the deadline asked for.
	l.prov.grant("lake", "bob")
	rot := ok(t, 200, http.MethodPost, l.nodes[1].URL+uc+"/recipients/bob/rotate-token", map[string]any{"existing_token_expire_in_seconds": 2})
	newBob := download(t, activationURL(t, rot))
	if r := newBob.client(t).get("/shares"); r.Status != 200 {
		t.Fatalf("new token: %d %s", r.Status, r.Raw)
	}
	testcluster.WaitFor(t, 10*time.Second, "the old token to expire", func() bool { return bc.get("/shares").Status == 401 })
	if r := newBob.client(t).get("/shares"); r.Status != 200 {
		t.Fatalf("new token after the old expired: %d", r.Status)
	}
	rot = ok(t, 200, http.MethodPost, l.nodes[1].URL+uc+"/recipients/bob/rotate-token", map[string]any{"existing_token_expire_in_seconds": 0})
	if r := newBob.client(t).get("/shares"); r.Status != 401 {
		t.Fatalf("token rotated with 0 s still works: %d", r.Status)
	}
	ok(t, 200, http.MethodDelete, l.nodes[1].URL+uc+"/recipients/bob", nil)
	if r := download(t, activationURL(t, ok(t, 200, http.MethodPost, l.nodes[1].URL+uc+"/recipients", map[string]any{"name": "bob"}))); r.client(t).get("/shares").Body["items"] != nil {
		t.Fatalf("a re-created recipient inherited grants")
	}
	// An expired token given at creation is refused.
	past := ok(t, 200, http.MethodPost, l.nodes[1].URL+uc+"/recipients", map[string]any{"name": "carol", "expiration_time": time.Now().Add(1500 * time.Millisecond).UnixMilli()})
	carol := download(t, activationURL(t, past))
	testcluster.WaitFor(t, 10*time.Second, "carol's token to expire", func() bool { return carol.client(t).get("/shares").Status == 401 })
}

func TestFileURLs(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	c := l.prof.client(t)
	a := c.query(tablePath("lake", "golden", "simple_table"), map[string]any{}).mustOK(t)
	f := a.of("file")[0]
	u, size := f["url"].(string), int64(f["size"].(float64))
	status, raw := fetch(t, u)
	if status != 200 || int64(len(raw)) != size {
		t.Fatalf("GET file: %d, %d bytes, want %d", status, len(raw), size)
	}
	if status, raw := fetch(t, u, "Range", "bytes=0-3"); status != 206 || string(raw) != "PAR1" {
		t.Fatalf("range: %d %q", status, raw)
	}
	if status, raw := fetch(t, u, "Range", "bytes=-8"); status != 206 || string(raw[4:]) != "PAR1" {
		t.Fatalf("suffix range: %d %q", status, raw)
	}
	if head := rawHead(t, u); !strings.Contains(head, "\r\nContent-Length: "+itoa(size)+"\r\n") || strings.Contains(head, "Content-Encoding") {
		t.Fatalf("HEAD: %q", head)
	}
	// Any node verifies a URL another node issued.
	for _, nd := range l.nodes {
		other := strings.Replace(u, l.nodes[1].URL, nd.URL, 1)
		if status, _ := fetch(t, other); status != 200 {
			t.Fatalf("URL on %s: %d", nd.URL, status)
		}
	}
	tampered := []string{u[:len(u)-2] + "xx", strings.Replace(u, "/files/", "/files/e30.", 1), u + "a"}
	for _, bad := range tampered {
		status, raw := fetch(t, bad)
		expectError(t, 403, "PERMISSION_DENIED", status, string(raw))
	}
	// Rotating the signing key retires every URL handed out before.
	ok(t, 200, http.MethodPost, l.nodes[2].URL+uc+"/delta-sharing/url-signing-key/rotate", nil)
	testcluster.WaitFor(t, 5*time.Second, "every node to refuse the old URL", func() bool {
		for _, nd := range l.nodes {
			if status, _ := fetch(t, strings.Replace(u, l.nodes[1].URL, nd.URL, 1)); status != 403 {
				return false
			}
		}
		return true
	})
	fresh := c.query(tablePath("lake", "golden", "simple_table"), map[string]any{}).mustOK(t)
	if status, _ := fetch(t, fresh.of("file")[0]["url"].(string)); status != 200 {
		t.Fatalf("URL after rotation: %d", status)
	}
}

func TestFileURLsExpire(t *testing.T) {
	l := startLake(t, testcluster.Options{SharingURLTTL: 1500 * time.Millisecond})
	a := l.prof.client(t).query(tablePath("lake", "golden", "simple_table"), map[string]any{}).mustOK(t)
	f := a.of("file")[0]
	exp := int64(f["expirationTimestamp"].(float64))
	if d := time.Until(time.UnixMilli(exp)); d <= 0 || d > 2*time.Second {
		t.Fatalf("expirationTimestamp %v from now", d)
	}
	testcluster.WaitFor(t, 10*time.Second, "the URL to expire", func() bool {
		status, _ := fetch(t, f["url"].(string))
		return status == 403
	})
	if time.Now().UnixMilli() < exp {
		t.Fatalf("the URL was refused before its expirationTimestamp")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// rawHead sends a HEAD request on a socket and returns the status line
// and headers as they came over the wire.
func rawHead(t *testing.T, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "HEAD %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: python-requests/2.32.3\r\n\r\n", pu.RequestURI(), pu.Host)
	var b strings.Builder
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("HEAD: %v after %q", err, b.String())
		}
		b.WriteString(line)
		if line == "\r\n" {
			return b.String()
		}
	}
}
