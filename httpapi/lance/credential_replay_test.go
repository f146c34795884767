package lance_test

import (
	"fmt"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestLanceCredentialCarriers replays, over raw HTTP, how the Lance
// Namespace Python client (lance-namespace-urllib3-client 0.11.1)
// carries a caller's credential, in each of the places the spec gives:
// Configuration(access_token=...) sends Authorization: Bearer,
// Configuration(api_key={"ApiKeyAuth": ...}) the x-api-key header, and a
// request's identity=Identity(api_key=... or auth_token=...) goes in the
// JSON body, which the client writes with json.dumps (", " and ": "
// separators), fields in the model's order (identity first). Its other
// habits: User-Agent OpenAPI-Generator/0.11.1/python, Accept and
// Content-Type application/json, the id URL-quoted (lake%24ns%24t) with
// ?delimiter=%24. Alice may read lake.ns.t and bob may not, so an answer
// tells whose credential the catalog took: 200 alice, 403 bob, 401
// nobody's. Headers win over the body.
func TestLanceCredentialCarriers(t *testing.T) {
	l := startAuthLake(t)
	alice, bob := l.user("alice"), l.user("bob")
	l.grant(fsm.SecurableCatalog, []string{"lake"}, "alice", fsm.PrivUseCatalog)
	l.grant(fsm.SecurableSchema, []string{"lake", "ns"}, "alice", fsm.PrivUseSchema, fsm.PrivCreateTable)
	l.grant(fsm.SecurableTable, []string{"lake", "ns", "t"}, "alice", fsm.PrivSelect)

	n := 0
	// send posts a request as the Python client does, to the next node
	// (followers forward it to the leader).
	send := func(path, body string, headers ...string) testcluster.Response {
		t.Helper()
		nd := l.nodes[n%len(l.nodes)]
		n++
		headers = append([]string{"User-Agent", "OpenAPI-Generator/0.11.1/python", "Accept", "application/json"}, headers...)
		return testcluster.Do(t, "POST", nd.URL+lance.Prefix+path, body, headers...)
	}
	const describe = "/v1/table/lake%24ns%24t/describe?delimiter=%24"
	plain := `{"id": ["lake", "ns", "t"]}`
	identity := func(field, token string) string {
		return fmt.Sprintf(`{"identity": {%q: %q}, "id": ["lake", "ns", "t"]}`, field, token)
	}
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	apiKey := func(tok string) []string { return []string{"x-api-key", tok} }

	for _, c := range []struct {
		name    string
		body    string
		headers []string
		status  int
	}{
		{"Bearer", plain, bearer(alice), 200},
		{"Bearer of bob", plain, bearer(bob), 403},
		{"x-api-key", plain, apiKey(alice), 200},
		{"x-api-key of bob", plain, apiKey(bob), 403},
		{"identity.api_key", identity("api_key", alice), nil, 200},
		{"identity.api_key of bob", identity("api_key", bob), nil, 403},
		{"identity.auth_token", identity("auth_token", alice), nil, 200},
		{"identity.auth_token of bob", identity("auth_token", bob), nil, 403},
		{"both identity fields: auth_token first", `{"identity": {"api_key": "` + bob + `", "auth_token": "` + alice + `"}, "id": ["lake", "ns", "t"]}`, nil, 200},
		{"Bearer over identity", identity("auth_token", bob), bearer(alice), 200},
		{"Bearer of bob over identity", identity("auth_token", alice), bearer(bob), 403},
		{"x-api-key over identity", identity("api_key", bob), apiKey(alice), 200},
		{"x-api-key of bob over identity", identity("api_key", alice), apiKey(bob), 403},
		{"Bearer over x-api-key", plain, append(bearer(alice), apiKey(bob)...), 200},
		{"a wrong Bearer over a right identity", identity("auth_token", alice), bearer("rc_wrong.token"), 401},
		{"a wrong x-api-key over a right identity", identity("api_key", alice), apiKey("rc_wrong.token"), 401},
		{"none", plain, nil, 401},
		{"an empty identity", `{"identity": {"api_key": "", "auth_token": ""}, "id": ["lake", "ns", "t"]}`, nil, 401},
		{"an identity of another shape", `{"identity": "` + alice + `", "id": ["lake", "ns", "t"]}`, nil, 401},
	} {
		for range l.nodes {
			r := send(describe, c.body, c.headers...)
			switch c.status {
			case 200:
				if r.Status != 200 || r.Body["location"] != l.w.table("t") {
					t.Fatalf("%s: %d %s, want 200", c.name, r.Status, r.Raw)
				}
			case 401:
				unauthenticated(t, r)
			default:
				refused(t, r, c.status, 15)
			}
		}
	}

	// A write names its caller by the body's identity too: alice owns the
	// table she declares so, and drops it with her API key; bob may not.
	declare := fmt.Sprintf(`{"identity": {"api_key": %q}, "id": ["lake", "ns", "mine"], "location": %q}`, alice, l.w.table("mine"))
	if r := send("/v1/table/lake%24ns%24mine/declare?delimiter=%24", declare); r.Status != 200 {
		t.Fatalf("declare with identity.api_key: %d %s", r.Status, r.Raw)
	}
	denied(t, send("/v1/table/lake%24ns%24mine/drop?delimiter=%24", `{"identity": {"auth_token": "`+bob+`"}}`))
	if r := send("/v1/table/lake%24ns%24mine/drop?delimiter=%24", "", apiKey(alice)...); r.Status != 200 {
		t.Fatalf("drop with x-api-key: %d %s", r.Status, r.Raw)
	}
}
