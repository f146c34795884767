package iceberg_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

func change(name, requirements, updates string) string {
	return `{"identifier":{"namespace":["db"],"name":"` + name + `"},"requirements":[` + requirements + `],"updates":[` + updates + `]}`
}

func txBody(changes ...string) string {
	return `{"table-changes":[` + fmt.Sprint(joinComma(changes)) + `]}`
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func location(t *testing.T, nd *testcluster.Node, name string) (string, uint64) {
	t.Helper()
	r := ok(t, http.StatusOK, http.MethodGet, base(nd)+"/namespaces/db/tables/"+name, nil)
	return r.Body["metadata-location"].(string), r.Index()
}

// A transaction commits every table in one entry; a failing requirement
// on its last table leaves every table as it was and applies nothing.
func TestTransaction(t *testing.T) {
	nodes := setup(t)
	create(t, nodes[0], "a")
	create(t, nodes[1], "b")
	tx := base(nodes[2]) + "/transactions/commit"
	set := `{"action":"set-properties","updates":{"x":"1"}}`
	ok(t, http.StatusNoContent, http.MethodPost, tx, txBody(change("a", "", set), change("b", "", set)))
	locA, _ := location(t, nodes[0], "a")
	locB, idx := location(t, nodes[1], "b")
	bad := `{"type":"assert-current-schema-id","current-schema-id":7}`
	r := testcluster.Do(t, http.MethodPost, tx, txBody(change("a", "", set), change("b", bad, set)))
	expectError(t, r, 409, "CommitFailedException")
	a2, _ := location(t, nodes[2], "a")
	b2, idx2 := location(t, nodes[0], "b")
	if a2 != locA || b2 != locB || idx2 != idx {
		t.Fatalf("a failed transaction changed something: %s %s index %d -> %s %s index %d", locA, locB, idx, a2, b2, idx2)
	}
	expectError(t, testcluster.Do(t, http.MethodPost, tx, `{"table-changes":[{"requirements":[],"updates":[]}]}`), 400, "BadRequestException")
	expectError(t, testcluster.Do(t, http.MethodPost, tx, txBody(change("a", "", set), change("a", "", set))), 400, "BadRequestException")
	expectError(t, testcluster.Do(t, http.MethodPost, tx, txBody(change("nope", "", set))), 404, "NoSuchTableException")
	expectError(t, testcluster.Do(t, http.MethodPost, tx, txBody(change("c", `{"type":"assert-create"}`, ""))), 406, "UnsupportedOperationException")
}

// Concurrent commits on one base, spread over the nodes: exactly one
// wins, the others fail with 409 and leave no metadata file behind.
func TestConcurrentCommits(t *testing.T) {
	nodes := setup(t)
	r := create(t, nodes[0], "t")
	const n = 6
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp := testcluster.Do(t, http.MethodPost, base(nodes[i%3])+"/namespaces/db/tables/t", appendBody(int64(i+1), 0, 1))
			statuses[i] = resp.Status
			if resp.Status == http.StatusConflict {
				expectError(t, resp, 409, "CommitFailedException")
			}
		})
	}
	wg.Wait()
	slices.Sort(statuses)
	if want := []int{200, 409, 409, 409, 409, 409}; !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	if files := metadataFiles(t, r); len(files) != 2 {
		t.Fatalf("metadata files %v, want the create's and the winner's", files)
	}
}

// Commits racing for one table are planned one after the other on the
// leader: the losers' requirements fail against the winner's pointer
// before they write anything, so the leader writes one metadata file.
func TestRacingCommitsWriteOneFile(t *testing.T) {
	nodes := setup(t)
	create(t, nodes[0], "race")
	leader := testcluster.Leader(t, nodes)
	before := stageCounts(t, leader)["file write"]
	const n = 8
	var wg sync.WaitGroup
	won := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			resp := testcluster.Do(t, http.MethodPost, base(nodes[i%3])+"/namespaces/db/tables/race", appendBody(int64(i+1), 0, 1))
			won[i] = resp.Status == http.StatusOK
		})
	}
	wg.Wait()
	if wins := len(slices.DeleteFunc(won, func(w bool) bool { return !w })); wins != 1 {
		t.Fatalf("%d commits won, want 1", wins)
	}
	if wrote := stageCounts(t, leader)["file write"] - before; wrote != 1 {
		t.Fatalf("the leader wrote %v metadata files for one winning commit", wrote)
	}
}

// Concurrent commits whose requirements do not conflict all succeed, one
// after the other: none fails for having been planned on a pointer
// another moved meanwhile.
func TestConcurrentCompatibleCommitsAllSucceed(t *testing.T) {
	nodes := setup(t)
	create(t, nodes[0], "props")
	const n = 8
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			set := fmt.Sprintf(`{"action":"set-properties","updates":{"k%d":"v"}}`, i)
			statuses[i] = testcluster.Do(t, http.MethodPost, base(nodes[i%3])+"/namespaces/db/tables/props", change("props", "", set)).Status
		})
	}
	wg.Wait()
	if slices.ContainsFunc(statuses, func(s int) bool { return s != http.StatusOK }) {
		t.Fatalf("statuses %v, want every commit 200", statuses)
	}
	props := ok(t, http.StatusOK, http.MethodGet, base(nodes[0])+"/namespaces/db/tables/props", nil).Body["metadata"].(map[string]any)["properties"].(map[string]any)
	for i := range n {
		if props[fmt.Sprintf("k%d", i)] != "v" {
			t.Fatalf("property k%d missing: %v", i, props)
		}
	}
}

// A staged create persists nothing until the commit with assert-create,
// which a second time fails.
func TestStagedCreate(t *testing.T) {
	nodes := setup(t)
	u := base(nodes[0]) + "/namespaces/db/tables"
	staged := ok(t, http.StatusOK, http.MethodPost, u, strings.Replace(createBody("s"), `"stage-create":false`, `"stage-create":true`, 1))
	if _, has := staged.Body["metadata-location"]; has || staged.Header.Get("ETag") != "" {
		t.Fatalf("staged create answered %s", staged.Raw)
	}
	ok(t, http.StatusNotFound, http.MethodHead, u+"/s", nil)
	m := meta(staged)
	schema := m["schemas"].([]any)[0]
	updates := fmt.Sprintf(`[{"action":"assign-uuid","uuid":%q},{"action":"upgrade-format-version","format-version":2},`+
		`{"action":"add-schema","schema":%s},{"action":"set-current-schema","schema-id":-1},`+
		`{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},{"action":"set-default-spec","spec-id":-1},`+
		`{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1},`+
		`{"action":"set-location","location":%q},{"action":"set-properties","updates":{"k":"v"}}]`,
		m["table-uuid"], mustJSON(schema), m["location"])
	body := `{"requirements":[{"type":"assert-create"}],"updates":` + updates + `}`
	c := ok(t, http.StatusOK, http.MethodPost, base(nodes[1])+"/namespaces/db/tables/s", body)
	if loc, _ := c.Body["metadata-location"].(string); !contains(loc, "/metadata/00000-") || c.Header.Get("ETag") == "" {
		t.Fatalf("staged commit answered %s", c.Raw)
	}
	for _, nd := range nodes {
		if l := ok(t, http.StatusOK, http.MethodGet, base(nd)+"/namespaces/db/tables/s", nil); l.Header.Get("ETag") != c.Header.Get("ETag") {
			t.Fatalf("load tag %s, commit tag %s", l.Header.Get("ETag"), c.Header.Get("ETag"))
		}
	}
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[2])+"/namespaces/db/tables/s", body), 409, "CommitFailedException")
}
