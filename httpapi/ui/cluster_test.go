package ui_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// These tests show the page on a real three-node cluster (raft over
// loopback) and write to it through a follower, so the follower answers
// the writes (relaying them to the leader) and its page times them.

const (
	ucPrefix      = "/api/2.1/unity-catalog"
	icebergPrefix = ucPrefix + "/iceberg/v1/unity"
	lancePrefix   = "/lance/v1"
	schema        = "sales"
)

// startCluster starts three nodes and returns them with their leader and
// one of its followers.
func startCluster(t *testing.T) (nodes []*testcluster.Node, leader, follower *testcluster.Node) {
	nodes = testcluster.Start(t, 3, testcluster.Options{})
	leader = testcluster.Leader(t, nodes)
	return nodes, leader, testcluster.Followers(nodes, leader)[0]
}

// catalog holds the tables createTables made.
type catalog struct {
	byFormat map[string]int
	delta    map[string]string // managed Delta table -> its uuid
	versions map[string]int64  // managed Delta table -> its latest version
	mu       sync.Mutex
}

// createTables creates schema sales with tables of five formats through
// the node at base: managed and external Delta, Iceberg, Lance, Parquet
// and CSV.
func createTables(t *testing.T, base string) *catalog {
	t.Helper()
	ok(t, http.MethodPost, base+ucPrefix+"/schemas", map[string]any{"name": schema, "catalog_name": "unity"})
	c := &catalog{byFormat: map[string]int{}, delta: map[string]string{}, versions: map[string]int64{}}
	for _, name := range []string{"orders", "customers", "payments"} {
		c.delta[name] = testcluster.CreateManaged(t, base, base, "unity", schema, name)
		c.byFormat["DELTA"]++
	}
	for name, format := range map[string]string{"web_events": "DELTA", "clickstream": "PARQUET", "exchange_rates": "CSV"} {
		ok(t, http.MethodPost, base+ucPrefix+"/tables", externalTable(name, format))
		c.byFormat[format]++
	}
	for _, name := range []string{"inventory", "shipments"} {
		ok(t, http.MethodPost, base+icebergPrefix+"/namespaces/"+schema+"/tables", icebergTable(name))
		c.byFormat["ICEBERG"]++
	}
	for _, name := range []string{"product_embeddings", "review_embeddings"} {
		ok(t, http.MethodPost, base+lancePrefix+"/table/"+url.PathEscape("unity$"+schema+"$"+name)+"/declare", map[string]any{})
		c.byFormat["LANCE"]++
	}
	return c
}

func externalTable(name, format string) map[string]any {
	return map[string]any{"name": name, "catalog_name": "unity", "schema_name": schema, "table_type": "EXTERNAL",
		"data_source_format": format, "storage_location": "/data/" + name + "/",
		"columns": []any{map[string]any{"name": "id", "type_json": `{"name":"id","type":"long","nullable":false,"metadata":{}}`,
			"position": 0, "nullable": false}}}
}

func icebergTable(name string) map[string]any {
	return map[string]any{"name": name, "schema": map[string]any{"type": "struct", "schema-id": 0,
		"fields": []any{map[string]any{"type": "long", "id": 1, "name": "id", "required": true}}}}
}

// commitAll adds the next commit to every managed Delta table, through
// the node at base.
func (c *catalog) commitAll(t *testing.T, base string) {
	t.Helper()
	for name := range c.delta {
		c.commit(t, base, name)
	}
}

// commit adds the next commit to the managed Delta table name, through
// the node at base.
func (c *catalog) commit(t *testing.T, base, name string) {
	t.Helper()
	if err := c.tryCommit(base, name); err != nil {
		t.Fatal(err)
	}
}

// tryCommit is commit for goroutines other than the test's. Each commit
// reports the one before as published, so a table never reaches the
// limit of unpublished commits. Commits to one table must not be sent
// concurrently (each names its version).
func (c *catalog) tryCommit(base, name string) error {
	c.mu.Lock()
	c.versions[name]++
	v, id := c.versions[name], c.delta[name]
	c.mu.Unlock()
	body := testcluster.CommitBody(id, v, testcluster.StagedName(v, fmt.Sprint("c", v)))
	if v > 1 {
		body["updates"] = append(body["updates"].([]any),
			map[string]any{"action": "set-latest-backfilled-version", "latest-published-version": v - 1})
	}
	raw, _ := json.Marshal(body)
	resp, err := http.Post(base+testcluster.TablePath("unity", schema, name), "application/json", bytes.NewReader(raw))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		answer, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("commit %d to %s: %d %s", v, name, resp.StatusCode, answer)
	}
	return nil
}

// ok sends a request and fails t unless it is answered 200.
func ok(t *testing.T, method, url string, body any) testcluster.Response {
	t.Helper()
	r := testcluster.Do(t, method, url, body)
	if r.Status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, url, r.Status, r.Raw)
	}
	return r
}

// transferLeadership hands leadership to the node to and waits until it
// leads.
func transferLeadership(t *testing.T, from, to *testcluster.Node) {
	t.Helper()
	ok(t, http.MethodPost, from.URL+"/v1/cluster/transfer-leadership", map[string]any{"id": to.ID()})
	testcluster.WaitFor(t, 30*time.Second, to.ID()+" leading", func() bool { return to.IsLeader() && to.Ready() })
}
