package sharing_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// expectUCError checks a UC REST error: status and error_code.
func expectUCError(t *testing.T, r testcluster.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Body["error_code"] != code || r.Body["message"] == "" {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Raw, status, code)
	}
}

// The provider's routes answer in Unity Catalog's shapes, through any
// node, and refuse what they cannot do without changing anything.
func TestManagingSharesAndRecipients(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	testcluster.Leader(t, nodes)
	u := func(i int) string { return nodes[i%3].URL + uc }
	p := provider{t: t, url: nodes[0].URL}
	p.schema("s")
	for _, name := range []string{"a", "b"} {
		p.registerExternal("s", name, copyTable(t, "simple_table"))
	}
	for i, name := range []string{"s1", "s2", "s3"} {
		r := ok(t, 200, http.MethodPost, u(i)+"/shares", map[string]any{"name": name, "comment": "c" + name})
		if r.Body["name"] != name || r.Body["id"] == "" || r.Body["comment"] != "c"+name || r.Body["created_at"] == nil {
			t.Fatalf("create share: %s", r.Raw)
		}
	}
	expectUCError(t, testcluster.Do(t, http.MethodPost, u(1)+"/shares", map[string]any{"name": "S1"}), 400, "SHARE_ALREADY_EXISTS")
	expectUCError(t, testcluster.Do(t, http.MethodPost, u(1)+"/shares", map[string]any{"name": "a b"}), 400, "INVALID_ARGUMENT")
	page := ok(t, 200, http.MethodGet, u(2)+"/shares?max_results=2", nil)
	next, _ := page.Body["next_page_token"].(string)
	rest := ok(t, 200, http.MethodGet, u(0)+"/shares?max_results=2&page_token="+next, nil)
	if len(page.Body["shares"].([]any)) != 2 || len(rest.Body["shares"].([]any)) != 1 {
		t.Fatalf("share pages: %s then %s", page.Raw, rest.Raw)
	}

	add := func(action string, obj map[string]any) testcluster.Response {
		return testcluster.Do(t, http.MethodPatch, u(1)+"/shares/s1", map[string]any{"updates": []any{map[string]any{"action": action, "data_object": obj}}})
	}
	if r := add("ADD", map[string]any{"name": "unity.s.a", "history_data_sharing_status": "ENABLED", "start_version": 1}); r.Status != 200 ||
		!strings.Contains(string(r.Raw), `"shared_as":"s.a"`) {
		t.Fatalf("add: %d %s", r.Status, r.Raw)
	}
	expectUCError(t, add("ADD", map[string]any{"name": "unity.s.a"}), 400, "INVALID_ARGUMENT")
	expectUCError(t, add("ADD", map[string]any{"name": "unity.s.nope"}), 404, "NOT_FOUND")
	expectUCError(t, add("ADD", map[string]any{"name": "unity.s.b", "history_data_sharing_status": "MAYBE"}), 400, "INVALID_ARGUMENT")
	expectUCError(t, add("MOVE", map[string]any{"name": "unity.s.b"}), 400, "INVALID_ARGUMENT")
	// All or nothing: a batch whose second update fails adds nothing.
	r := testcluster.Do(t, http.MethodPatch, u(2)+"/shares/s1", map[string]any{"updates": []any{
		map[string]any{"action": "ADD", "data_object": map[string]any{"name": "unity.s.b"}},
		map[string]any{"action": "REMOVE", "data_object": map[string]any{"name": "unity.s.nope"}}}})
	expectUCError(t, r, 404, "NOT_FOUND")
	got := ok(t, 200, http.MethodGet, u(0)+"/shares/s1?include_shared_data=true", nil)
	if objs := got.Body["objects"].([]any); len(objs) != 1 || objs[0].(map[string]any)["start_version"] != float64(1) {
		t.Fatalf("objects after a failed batch: %s", got.Raw)
	}
	if plain := ok(t, 200, http.MethodGet, u(0)+"/shares/s1", nil); plain.Body["objects"] != nil {
		t.Fatalf("objects without include_shared_data: %s", plain.Raw)
	}
	if r := add("UPDATE", map[string]any{"name": "unity.s.a", "shared_as": "s.renamed", "comment": "x"}); r.Status != 200 ||
		!strings.Contains(string(r.Raw), `"shared_as":"s.renamed"`) {
		t.Fatalf("update: %d %s", r.Status, r.Raw)
	}

	rec := ok(t, 200, http.MethodPost, u(1)+"/recipients", map[string]any{"name": "r1", "comment": "partner"})
	toks := rec.Body["tokens"].([]any)
	if rec.Body["authentication_type"] != "TOKEN" || len(toks) != 1 || rec.Body["activated"] != false {
		t.Fatalf("create recipient: %s", rec.Raw)
	}
	if tok := toks[0].(map[string]any); tok["id"] == "" || tok["created_at"] == nil || !strings.Contains(tok["activation_url"].(string), "/public/data_sharing_activation/") {
		t.Fatalf("token: %v", tok)
	}
	expectUCError(t, testcluster.Do(t, http.MethodPost, u(2)+"/recipients", map[string]any{"name": "R1"}), 400, "RECIPIENT_ALREADY_EXISTS")
	expectUCError(t, testcluster.Do(t, http.MethodPost, u(2)+"/recipients", map[string]any{"name": "r9", "authentication_type": "OAUTH"}), 400, "INVALID_ARGUMENT")
	expectUCError(t, testcluster.Do(t, http.MethodGet, u(2)+"/recipients/nope", nil), 404, "NOT_FOUND")
	expectUCError(t, testcluster.Do(t, http.MethodGet, u(2)+"/public/data_sharing_activation/nope", nil), 404, "NOT_FOUND")
	expectUCError(t, testcluster.Do(t, http.MethodPost, u(2)+"/recipients/r1/rotate-token", map[string]any{}), 400, "INVALID_ARGUMENT")
	if list := ok(t, 200, http.MethodGet, u(0)+"/recipients", nil); len(list.Body["recipients"].([]any)) != 1 || strings.Contains(string(list.Raw), "activation_url") {
		t.Fatalf("recipients: %s", list.Raw)
	}

	perm := func(body map[string]any) testcluster.Response {
		return testcluster.Do(t, http.MethodPatch, u(2)+"/shares/s1/permissions", body)
	}
	expectUCError(t, perm(map[string]any{"changes": []any{map[string]any{"principal": "nobody", "add": []string{"SELECT"}}}}), 404, "NOT_FOUND")
	expectUCError(t, perm(map[string]any{"changes": []any{map[string]any{"principal": "r1", "add": []string{"MODIFY"}}}}), 400, "INVALID_ARGUMENT")
	if r := perm(map[string]any{"changes": []any{map[string]any{"principal": "r1", "add": []string{"select"}}}}); r.Status != 200 ||
		fmt.Sprint(r.Body["privilege_assignments"]) != "[map[principal:r1 privileges:[SELECT]]]" {
		t.Fatalf("grant: %d %s", r.Status, r.Raw)
	}
	if r := ok(t, 200, http.MethodGet, u(0)+"/shares/s1/permissions", nil); fmt.Sprint(r.Body["privilege_assignments"]) != "[map[principal:r1 privileges:[SELECT]]]" {
		t.Fatalf("permissions: %s", r.Raw)
	}
	ok(t, 200, http.MethodDelete, u(1)+"/recipients/r1", nil)
	if r := ok(t, 200, http.MethodGet, u(0)+"/shares/s1/permissions", nil); fmt.Sprint(r.Body["privilege_assignments"]) != "[]" {
		t.Fatalf("a deleted recipient kept its grant: %s", r.Raw)
	}
	ok(t, 200, http.MethodDelete, u(2)+"/shares/s2", nil)
	expectUCError(t, testcluster.Do(t, http.MethodGet, u(0)+"/shares/s2", nil), 404, "NOT_FOUND")
	expectUCError(t, testcluster.Do(t, http.MethodDelete, u(0)+"/shares/s2", nil), 404, "NOT_FOUND")
}
