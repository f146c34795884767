package httpapi_test

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

// deltaWriter plays a catalog-managed Delta writer against a cluster: it
// writes staged commit files under the table's file:// location, ratifies
// them through the API (each request to another node), publishes them to
// _delta_log/ and reports the backfill, as the managed-tables spec says.
type deltaWriter struct {
	t     *testing.T
	nodes []*testcluster.Node
	path  string // Delta API path of the table
	id    string
	dir   string // local directory of the table location
	calls int
}

func (w *deltaWriter) node() string {
	w.calls++
	return w.nodes[w.calls%len(w.nodes)].URL
}

// stage writes version v's staged commit file and returns its name.
func (w *deltaWriter) stage(v int64, content string) string {
	w.t.Helper()
	name := fmt.Sprintf("%020d.%s.json", v, strings.Repeat(fmt.Sprint(v%10), 8))
	p := filepath.Join(w.dir, "_delta_log", "_staged_commits", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return name
}

func commitJSON(v int64) string {
	lines := []map[string]any{
		{"commitInfo": map[string]any{"inCommitTimestamp": 1700000000000 + v, "operation": "WRITE", "txnId": fmt.Sprintf("txn-%d", v)}},
		{"add": map[string]any{"path": fmt.Sprintf("part-%05d.parquet", v), "size": 100 + v, "dataChange": true, "modificationTime": 1700000000000 + v}},
	}
	var b strings.Builder
	for _, l := range lines {
		raw, _ := json.Marshal(l)
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// commit ratifies version v with the staged file's real size and mtime.
func (w *deltaWriter) commit(v int64, name string, extra ...map[string]any) testcluster.Response {
	w.t.Helper()
	fi, err := os.Stat(filepath.Join(w.dir, "_delta_log", "_staged_commits", name))
	if err != nil {
		w.t.Fatal(err)
	}
	updates := []any{map[string]any{"action": "add-commit", "commit": map[string]any{
		"version": v, "timestamp": 1700000000000 + v, "file-name": name,
		"file-size": fi.Size(), "file-modification-timestamp": fi.ModTime().UnixMilli()}}}
	for _, e := range extra {
		updates = append(updates, e)
	}
	return testcluster.Do(w.t, http.MethodPost, w.node()+w.path, map[string]any{
		"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": w.id}}, "updates": updates})
}

// publish copies the ratified staged file to _delta_log/<v>.json and
// reports it as backfilled.
func (w *deltaWriter) publish(v int64, name string) {
	w.t.Helper()
	log := filepath.Join(w.dir, "_delta_log")
	b, err := os.ReadFile(filepath.Join(log, "_staged_commits", name))
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(log, fmt.Sprintf("%020d.json", v)), b, 0o644); err != nil {
		w.t.Fatal(err)
	}
	r := testcluster.Do(w.t, http.MethodPost, w.node()+w.path, map[string]any{
		"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": w.id}},
		"updates":      []any{map[string]any{"action": "set-latest-backfilled-version", "latest-published-version": v}}})
	if r.Status != http.StatusOK {
		w.t.Fatalf("report backfill %d: %d %s", v, r.Status, r.Raw)
	}
}

func TestDeltaWriterWithRealFilesAcrossTheCluster(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	id := testcluster.CreateManaged(t, nodes[0].URL, nodes[1].URL, "unity", "default", "files")
	path := testcluster.TablePath("unity", "default", "files")
	load := testcluster.Do(t, http.MethodGet, nodes[2].URL+path, nil)
	loc := load.Body["metadata"].(map[string]any)["location"].(string)
	w := &deltaWriter{t: t, nodes: nodes, path: path, id: id, dir: strings.TrimPrefix(loc, "file://")}

	// Ratify and publish versions 1..12; the catalog tracks at most the
	// unpublished ones, so the 10-commit limit never bites.
	names := map[int64]string{}
	for v := int64(1); v <= 12; v++ {
		names[v] = w.stage(v, commitJSON(v))
		if r := w.commit(v, names[v]); r.Status != http.StatusOK {
			t.Fatalf("commit v%d: %d %s", v, r.Status, r.Raw)
		}
		if v%3 == 0 {
			for p := v - 2; p <= v; p++ {
				w.publish(p, names[p])
			}
		}
	}
	load = testcluster.Do(t, http.MethodGet, nodes[0].URL+path, nil)
	if load.Body["latest-table-version"] != float64(12) || len(load.Body["commits"].([]any)) != 0 {
		t.Fatalf("after publishing everything: %s", load.Raw)
	}

	// A writer whose acknowledgement of v5 was lost retries it byte for byte:
	// v5 is purged from the catalog, but its published file equals the staged
	// one, so the retry is recognised as a replay.
	if r := w.commit(5, names[5]); r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(12) {
		t.Fatalf("replay of purged v5: %d %s", r.Status, r.Raw)
	}
	// Another writer that staged different content for v5 lost the race.
	loser := w.stage(5, commitJSON(500))
	r := w.commit(5, loser)
	if r.Status != http.StatusConflict || r.Body["error"].(map[string]any)["type"] != "CommitVersionConflictException" ||
		!strings.Contains(r.Text(), "already published") {
		t.Fatalf("purged v5 with other content: %d %s", r.Status, r.Raw)
	}
	// When the published file cannot be read, the outcome is unknown: 500
	// CommitStateUnknownException asking for a retry, and nothing changes.
	if err := os.Remove(filepath.Join(w.dir, "_delta_log", fmt.Sprintf("%020d.json", 4))); err != nil {
		t.Fatal(err)
	}
	r = w.commit(4, names[4])
	if r.Status != http.StatusInternalServerError || r.Body["error"].(map[string]any)["type"] != "CommitStateUnknownException" ||
		!strings.Contains(r.Text(), "retry") {
		t.Fatalf("purged v4 without its published file: %d %s", r.Status, r.Raw)
	}
	// The next real version still goes through.
	names[13] = w.stage(13, commitJSON(13))
	if r := w.commit(13, names[13]); r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(13) {
		t.Fatalf("commit v13: %d %s", r.Status, r.Raw)
	}
}
