package sharing_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// ndjsonLines joins actions as a Delta commit file.
func ndjsonLines(actions ...map[string]any) []byte {
	var b strings.Builder
	for _, a := range actions {
		raw, _ := json.Marshal(a)
		b.Write(raw)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func addAction(path string, rows int) map[string]any {
	return map[string]any{"add": map[string]any{"path": path, "partitionValues": map[string]any{}, "size": 100,
		"modificationTime": 1700000000000, "dataChange": true, "stats": fmt.Sprintf(`{"numRecords":%d}`, rows)}}
}

// A catalog-managed table written through the Delta API is shared with
// the commits raftcat ratified but the writer has not published yet.
func TestManagedTableWithUnpublishedCommits(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	testcluster.Leader(t, nodes)
	staged := testcluster.Stage(t, nodes[0].URL, "unity", "default", "events")
	body := testcluster.CreateManagedBody("events", staged)
	loc := staged.Body["location"].(string)
	dir := strings.TrimPrefix(loc, "file://")
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	props := body["properties"].(map[string]any)
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"amount","type":"double","nullable":true,"metadata":{}}]}`
	write("_delta_log/00000000000000000000.json", ndjsonLines(
		map[string]any{"commitInfo": map[string]any{"inCommitTimestamp": 1700000000000, "operation": "CREATE TABLE"}},
		map[string]any{"protocol": logProtocol(body["protocol"].(map[string]any))},
		map[string]any{"metaData": map[string]any{"id": staged.Body["table-id"], "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
			"schemaString": schema, "partitionColumns": []string{}, "configuration": props, "createdTime": 1700000000000}},
		addAction("part-0.parquet", 10)))
	ok(t, 200, http.MethodPost, nodes[1].URL+testcluster.DeltaBase+"/catalogs/unity/schemas/default/tables", body)
	id := staged.Body["table-id"].(string)
	for v := int64(1); v <= 2; v++ {
		name := testcluster.StagedName(v, fmt.Sprintf("%08d-0000-0000-0000-000000000000", v))
		write("_delta_log/_staged_commits/"+name, ndjsonLines(
			map[string]any{"commitInfo": map[string]any{"inCommitTimestamp": 1700000000000 + v*1000, "operation": "WRITE"}},
			addAction(fmt.Sprintf("part-%d.parquet", v), 5)))
		ok(t, 200, http.MethodPost, nodes[2].URL+testcluster.TablePath("unity", "default", "events"), testcluster.CommitBody(id, v, name))
	}
	p := provider{t: t, url: nodes[0].URL}
	p.share("live")
	p.add("live", "unity.default.events", "default.events", true)
	prof := p.recipient("reader")
	p.grant("live", "reader")
	for i, nd := range nodes {
		pr := prof
		pr.Endpoint = strings.Replace(pr.Endpoint, nodes[0].URL, nd.URL, 1)
		c := pr.client(t)
		c.caps = pyDetect
		a := c.query(tablePath("live", "default", "events"), map[string]any{}).mustOK(t)
		if a.header.Get("Delta-Table-Version") != "2" || a.rows(t) != 20 || a.header.Get("delta-sharing-capabilities") != "responseformat=delta" {
			t.Fatalf("node %d: latest of the managed table: %v %s", i, a.header, a.raw)
		}
		proto := a.of("protocol")[0]["deltaProtocol"].(map[string]any)
		if strings.Contains(fmt.Sprint(proto), "catalogManaged") || !strings.Contains(fmt.Sprint(proto), "deletionVectors") {
			t.Fatalf("recipient protocol %v", proto)
		}
		if v1 := c.query(tablePath("live", "default", "events"), map[string]any{"version": 1}).mustOK(t); v1.rows(t) != 15 {
			t.Fatalf("version 1: %s", v1.raw)
		}
		if r := c.get(tablePath("live", "default", "events") + "/version"); r.Header.Get("Delta-Table-Version") != "2" {
			t.Fatalf("version: %v", r.Header)
		}
	}
}

// logProtocol is a Delta API protocol object as a log's protocol action.
func logProtocol(p map[string]any) map[string]any {
	return map[string]any{"minReaderVersion": p["min-reader-version"], "minWriterVersion": p["min-writer-version"],
		"readerFeatures": p["reader-features"], "writerFeatures": p["writer-features"]}
}
