package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// The access sweep: every route of every protocol, on a cluster run with
// --auth=token. Without a credential a route answers 401 in its
// protocol's envelope, with a principal that holds nothing it answers 403
// (routes any principal may call excepted), and as the metastore admin it
// is let through. A route registered without a rule, or without a case
// here, fails the sweep.

// authSweepSkips are routes the sweep leaves alone: leave stops the node.
var authSweepSkips = []string{"POST /v1/cluster/leave", "GET /v1/cluster/relay"}

// sweepFixtures are the names the sweep fills route parameters with.
type sweepFixtures struct {
	stagingID, tokenID string
}

// authFill gives a route's parameters values naming what the cluster
// holds, so that a stranger is refused for lacking a privilege, not let
// through to a 404.
func (f sweepFixtures) fill(path string) string {
	return paramPattern.ReplaceAllStringFunc(path, func(p string) string {
		switch {
		case p == ":name" && strings.Contains(path, "/shares/"):
			return "sweep_sh"
		case p == ":name" && strings.Contains(path, "/recipients/"):
			return "sweep_rcp"
		case p == ":name" && strings.Contains(path, "/principals/"):
			return "victim"
		case p == ":id" && strings.Contains(path, "/staging-tables/"):
			return f.stagingID
		case p == ":id" && strings.Contains(path, "/tokens/"):
			return f.tokenID
		case p == ":id" && strings.Contains(path, "/namespace/"):
			return "unity$default"
		case p == ":id":
			return "unity$default$sweep"
		case p == ":securable_type":
			return "table"
		case p == ":view":
			return "sweep"
		case p == ":full_name" && strings.Contains(path, "/schemas/"):
			return "unity.default"
		}
		return fill(p, "", "")
	})
}

// authedRaw sends a request with an optional bearer token.
func authedRaw(t *testing.T, base, method, path, body, token string) reply {
	t.Helper()
	if token == "" {
		return rawDo(t, base, method, path, body)
	}
	return rawDo(t, base, method, path, body, "Authorization: Bearer "+token)
}

func setUpSweep(t *testing.T, nodes []*testcluster.Node) (sweepFixtures, string) {
	t.Helper()
	base, admin := nodes[0].URL, testcluster.Bearer(adminToken)
	testcluster.CreateManaged(t, base, base, "unity", "default", "sweep", admin...)
	st := testcluster.Stage(t, base, "unity", "default", "sweep_staged", admin...)
	f := sweepFixtures{stagingID: st.Body["table-id"].(string)}
	for _, c := range []struct{ path, body string }{
		{apiPrefix + "/shares", `{"name":"sweep_sh"}`},
		{apiPrefix + "/recipients", `{"name":"sweep_rcp","authentication_type":"TOKEN"}`},
		{"/v1/auth/principals", `{"name":"victim","type":"user"}`},
		{"/v1/auth/principals", `{"name":"stranger","type":"user"}`},
	} {
		if r := authedRaw(t, base, http.MethodPost, c.path, c.body, adminToken); r.status != http.StatusOK {
			t.Fatalf("POST %s: %d %s", c.path, r.status, r.raw)
		}
	}
	r := authedRaw(t, base, http.MethodPost, "/v1/auth/tokens", `{"principal":"admin"}`, adminToken)
	f.tokenID = str(t, r.obj(t)["id"])
	r = authedRaw(t, base, http.MethodPost, "/v1/auth/tokens", `{"principal":"stranger"}`, adminToken)
	return f, str(t, r.obj(t)["token"])
}

func TestEveryRouteChecksCredentials(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: adminToken})
	f, stranger := setUpSweep(t, nodes)
	type target struct{ method, path, route, kind, body, base string }
	var targets []target
	for i, rt := range nodes[0].Routes() {
		route := rt.Method + " " + rt.Path
		if strings.HasPrefix(rt.Method, "echo_") || slices.Contains(authSweepSkips, route) || strings.HasPrefix(rt.Path, "/debug") ||
			slices.Contains([]string{"CONNECT", "TRACE", "OPTIONS", "PUT"}, rt.Method) {
			continue
		}
		kind := nodes[0].RuleKind(rt.Method, rt.Path)
		if kind == "" {
			t.Errorf("route %s has no access rule", route)
			continue
		}
		body := ""
		if rt.Method == http.MethodPost || rt.Method == http.MethodPatch {
			rc, ok := routeCases[route]
			if !ok {
				t.Errorf("route %s has no case in routeCases", route)
				continue
			}
			body = rc.body
		}
		targets = append(targets, target{rt.Method, f.fill(rt.Path), route, kind, body, nodes[i%3].URL})
	}
	for _, tg := range targets { // no credential, then a stranger, before anything changes
		if tg.kind == "public" || tg.kind == "self" {
			continue
		}
		t.Run("none "+tg.route, func(t *testing.T) {
			r := authedRaw(t, tg.base, tg.method, tg.path, tg.body, "")
			if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("status %d, WWW-Authenticate %q; want 401 with a Bearer challenge: %.300s", r.status, r.header.Get("WWW-Authenticate"), r.raw)
			}
			expect4xx(t, tg.method, tg.path, r)
		})
		t.Run("stranger "+tg.route, func(t *testing.T) {
			r := authedRaw(t, tg.base, tg.method, tg.path, tg.body, stranger)
			switch {
			case tg.kind == "caller" && (r.status == http.StatusUnauthorized || r.status == http.StatusForbidden):
				t.Fatalf("any principal may call this route, but it answered %d: %.300s", r.status, r.raw)
			case tg.kind != "caller" && r.status != http.StatusForbidden:
				t.Fatalf("status %d, want 403: %.300s", r.status, r.raw)
			case r.status == http.StatusForbidden:
				expect4xx(t, tg.method, tg.path, r)
			}
		})
	}
	for _, tg := range targets {
		t.Run("admin "+tg.route, func(t *testing.T) {
			r := authedRaw(t, tg.base, tg.method, tg.path, tg.body, adminToken)
			if tg.kind != "self" && tg.kind != "public" && (r.status == http.StatusUnauthorized || r.status == http.StatusForbidden) {
				t.Fatalf("the admin was refused: %d %.300s", r.status, r.raw)
			}
		})
	}
}
