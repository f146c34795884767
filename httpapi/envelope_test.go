package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// Every answer under a protocol's prefix is in that protocol's envelope,
// including the ones Go's HTTP server gives before a handler runs.

// rawExchange writes raw to the node as it is and reads one answer. The
// request is written while the answer is read: a server may answer (and
// close) before it has read everything.
func rawExchange(t testing.TB, base, raw string) reply {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { _, _ = io.WriteString(conn, raw) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: body}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&r.body); err != nil {
		t.Fatalf("status %d, body is not JSON: %v: %q", r.status, err, body)
	}
	return r
}

// adminErr checks the admin envelope {"error": message, "code": status}.
func adminErr(t testing.TB, r reply, status int, want ...string) {
	t.Helper()
	top := r.obj(t)
	if r.status != status || num(t, top["code"]) != int64(status) || len(top) != 2 {
		t.Fatalf("status %d, want %d in the admin envelope: %s", r.status, status, r.raw)
	}
	for _, w := range want {
		if msg := str(t, top["error"]); !strings.Contains(msg, w) {
			t.Fatalf("error %q does not contain %q", msg, w)
		}
	}
}

func TestFastRefusedRequestsInEnvelope(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	get := func(path string, hdr ...string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(hdr, "") + "\r\n"
	}
	t.Run("bad escape, UC REST", func(t *testing.T) {
		r := rawExchange(t, a.base, get(apiPrefix+"/catalogs/%zz"))
		ucErr(t, r, 400, "INVALID_ARGUMENT", "percent-escape")
	})
	t.Run("bad escape, Delta", func(t *testing.T) {
		r := rawExchange(t, a.base, get(deltaPrefix+"/catalogs/%zz/schemas"))
		deltaErr(t, r, 400, "InvalidParameterValueException", "percent-escape")
	})
	t.Run("bad escape, admin", func(t *testing.T) {
		adminErr(t, rawExchange(t, a.base, get("/v1/cluster/%zz")), 400, "percent-escape")
	})
	t.Run("header too large", func(t *testing.T) {
		r := rawExchange(t, a.base, get(apiPrefix+"/catalogs", "X-Big: "+strings.Repeat("a", 2<<20)+"\r\n"))
		ucErr(t, r, 431, "INTERNAL", "too large")
	})
	t.Run("path too large", func(t *testing.T) {
		r := rawExchange(t, a.base, get(deltaPrefix+"/catalogs/"+strings.Repeat("a", 2<<20)))
		deltaErr(t, r, 431, "InternalServerErrorException", "too large")
	})
	t.Run("malformed header", func(t *testing.T) {
		r := rawExchange(t, a.base, get(apiPrefix+"/catalogs", "Bad Header: x\r\n"))
		ucErr(t, r, 400, "INVALID_ARGUMENT", "invalid header name")
	})
}

// A path that exists with another method is a 405 naming the methods it
// has, in the protocol's envelope.
func TestFastWrongMethodIs405(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	for _, m := range []string{http.MethodPut, http.MethodPatch, "TRACE"} {
		r := a.do(m, apiPrefix+"/metastore_summary", nil)
		ucErr(t, r, 405, "UNIMPLEMENTED")
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
			t.Fatalf("%s metastore_summary: Allow %q, want GET in it", m, allow)
		}
	}
	r := a.do(http.MethodPut, apiPrefix+"/catalogs/unity", nil)
	ucErr(t, r, 405, "UNIMPLEMENTED")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "PATCH") || !strings.Contains(allow, "DELETE") {
		t.Fatalf("PUT catalogs/unity: Allow %q", allow)
	}
	r = a.do(http.MethodPut, deltaPrefix+"/config", nil)
	deltaErr(t, r, 405, "InvalidParameterValueException")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("PUT delta config: Allow %q", allow)
	}
	// Unknown paths stay 404s.
	ucErr(t, a.do(http.MethodGet, apiPrefix+"/no-such-thing", nil), 404, "NOT_FOUND")
}

// A body that cannot be read (a malformed chunked encoding) is the same
// 400 whichever node it reaches: read by the leader's handler, relayed or
// forwarded by a follower, or streamed to the leader (a restore). So are
// a wrong method and a refused request line.
func TestEnvelopeSameOnEveryNode(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]
	paths := []string{apiPrefix + "/catalogs", deltaPrefix + "/catalogs/unity/schemas/default/staging-tables",
		"/v1/cluster/transfer-leadership", "/v1/cluster/restore"}
	for _, p := range paths {
		raw := "POST " + p + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"5\r\n{\"a\":\r\nzz\r\n1\r\n}\r\n0\r\n\r\n"
		onLeader, onFollower := rawExchange(t, leader.URL, raw), rawExchange(t, follower.URL, raw)
		if onLeader.status != 400 || onFollower.status != 400 || !bytes.Equal(onLeader.raw, onFollower.raw) {
			t.Errorf("POST %s: leader %d %s, follower %d %s; want the same 400", p,
				onLeader.status, onLeader.raw, onFollower.status, onFollower.raw)
		}
	}
	for raw, status := range map[string]int{
		"PUT " + apiPrefix + "/metastore_summary HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n": 405,
		"TRACE " + deltaPrefix + "/config HTTP/1.1\r\nHost: x\r\n\r\n":                             405,
		"GET " + apiPrefix + "/catalogs/%zz HTTP/1.1\r\nHost: x\r\n\r\n":                           400,
	} {
		onLeader, onFollower := rawExchange(t, leader.URL, raw), rawExchange(t, follower.URL, raw)
		if onLeader.status != status || onFollower.status != status || !bytes.Equal(onLeader.raw, onFollower.raw) ||
			onLeader.header.Get("Allow") != onFollower.header.Get("Allow") {
			t.Errorf("%q: leader %d %s, follower %d %s; want the same %d", raw,
				onLeader.status, onLeader.raw, onFollower.status, onFollower.raw, status)
		}
	}
}
