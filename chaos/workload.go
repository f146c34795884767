package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

const deltaBase = "/api/2.1/unity-catalog/delta/v1/catalogs/unity/schemas/default"

// recorder collects operations from concurrent clients.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

func (r *recorder) now() int64 { return time.Since(r.start).Nanoseconds() }

func (r *recorder) add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

var httpc = &http.Client{Timeout: 5 * time.Second, Transport: drillTransport}

// call sends a JSON request and decodes a JSON answer. err is set for
// transport failures, for an answer cut short and for a 200 that is not a
// JSON object (the outcome is then unknown: a node may have died mid-answer).
func call(method, url string, body any) (int, map[string]any, error) {
	status, raw, err := send(method, url, body)
	if err != nil {
		return status, nil, err
	}
	var out map[string]any // nil when an error answer is not JSON
	if err := json.Unmarshal(raw, &out); err != nil && status == http.StatusOK {
		return status, nil, fmt.Errorf("a 200 answer that is not JSON: %w", err)
	}
	return status, out, nil
}

// send sends a JSON request and returns the answer's status and body;
// status is 0 when no answer came, and err is set too when the body was
// cut short.
func send(method, url string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// createTable stages and creates a managed Delta table; it returns its uuid.
func createTable(url, name string) (string, error) {
	status, st, err := call(http.MethodPost, url+deltaBase+"/staging-tables", map[string]any{"name": name})
	if err != nil || status != http.StatusOK {
		return "", fmt.Errorf("stage %s: %d %v %v", name, status, st, err)
	}
	body := map[string]any{"name": name, "location": st["location"], "table-type": "MANAGED",
		"last-commit-timestamp-ms": 1, "protocol": st["required-protocol"], "properties": st["required-properties"],
		"columns": map[string]any{"type": "struct", "fields": []any{
			map[string]any{"name": "id", "type": "long", "nullable": false, "metadata": map[string]any{}}}}}
	status, out, err := call(http.MethodPost, url+deltaBase+"/tables", body)
	if err != nil || status != http.StatusOK {
		return "", fmt.Errorf("create %s: %d %v %v", name, status, out, err)
	}
	return st["table-id"].(string), nil
}

// client is one sequential Delta writer: load, then commit the next
// version, following the commit-recovery rules: an unknown outcome is
// retried byte-identically until a definite answer; only a 409 (or a load
// showing the version taken and published) makes it rebase.
type client struct {
	id    int
	table string
	uuid  string
	urls  []string
	rng   *rand.Rand
	rec   *recorder
	seq   int
}

func (c *client) url() string { return c.urls[c.rng.IntN(len(c.urls))] }

func (c *client) tableName() string { return c.table }

func (c *client) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		latest, etag, ok := c.load()
		if !ok {
			time.Sleep(50 * time.Millisecond) // client back-off after an unavailable answer
			continue
		}
		if c.rng.IntN(5) == 0 {
			c.update(etag)
			continue
		}
		c.commit(latest+1, stop)
	}
}

// update changes a table property guarded by assert-etag. An unknown
// outcome is not retried: had it applied, the retry's etag would be stale.
func (c *client) update(etag string) {
	c.seq++
	body := map[string]any{
		"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": c.uuid},
			map[string]any{"type": "assert-etag", "etag": etag}},
		"updates": []any{map[string]any{"action": "set-properties",
			"updates": map[string]any{fmt.Sprintf("chaos.client%d", c.id): fmt.Sprint(c.seq)}}},
	}
	op := Op{Client: c.id, Table: c.table, Op: OpUpdate, ETag: etag, InvokeNs: c.rec.now()}
	status, out, err := call(http.MethodPost, c.url()+deltaBase+"/tables/"+c.table, body)
	op.CompleteNs = c.rec.now()
	if op.settle(status, err) == OutcomeOK {
		op.NewETag, _ = out["metadata"].(map[string]any)["etag"].(string)
	}
	c.rec.add(op)
}

func (c *client) load() (int64, string, bool) {
	op, _ := c.loadTracked()
	return op.LatestVersion, op.ETag, op.Outcome == OutcomeOK
}

// loadTracked records a load and returns it with the versions the table
// still tracks (committed, not yet published).
func (c *client) loadTracked() (Op, map[int64]bool) {
	op := Op{Client: c.id, Table: c.table, Op: OpLoad, InvokeNs: c.rec.now()}
	status, body, err := call(http.MethodGet, c.url()+deltaBase+"/tables/"+c.table, nil)
	op.CompleteNs = c.rec.now()
	tracked := map[int64]bool{}
	if op.settle(status, err) == OutcomeOK {
		op.LatestVersion = int64(body["latest-table-version"].(float64))
		op.ETag, _ = body["metadata"].(map[string]any)["etag"].(string)
		cms, _ := body["commits"].([]any)
		for _, cm := range cms {
			v, _ := cm.(map[string]any)["version"].(float64)
			tracked[int64(v)] = true
		}
	}
	c.rec.add(op)
	return op, tracked
}

// commit tries version v until the outcome is definite, the run ends, or
// a load shows v taken and published.
func (c *client) commit(v int64, stop <-chan struct{}) {
	c.seq++
	file := fmt.Sprintf("%020d.c%d-%d.json", v, c.id, c.seq)
	body := deltaCommitBody(c.uuid, v, file)
	for {
		op := Op{Client: c.id, Table: c.table, Op: OpCommit, Version: v, FileName: file, InvokeNs: c.rec.now()}
		status, _, err := call(http.MethodPost, c.url()+deltaBase+"/tables/"+c.table, body)
		op.CompleteNs = c.rec.now()
		op.settle(status, err)
		c.rec.add(op)
		if op.Outcome != OutcomeUnknown {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond): // retry back-off
		}
		if c.published(v) {
			return
		}
	}
}

// published loads the table and reports whether version v is taken and
// no longer tracked. A commit of v then applied or never will, and an
// identical retry can only be answered that its outcome cannot be
// determined: the server compares a published version's commit file,
// and the drill writes none. Its outcome stays unknown.
func (c *client) published(v int64) bool {
	op, tracked := c.loadTracked()
	return op.Outcome == OutcomeOK && op.LatestVersion >= v && !tracked[v]
}

// deltaCommitBody is the table update that add-commits version v as file.
func deltaCommitBody(uuid string, v int64, file string) map[string]any {
	updates := []any{map[string]any{"action": "add-commit", "commit": map[string]any{
		"version": v, "timestamp": v, "file-name": file, "file-size": 100, "file-modification-timestamp": v}}}
	if v > 1 { // report the previous version as published, so the 10-commit limit never bites
		updates = append(updates, map[string]any{"action": "set-latest-backfilled-version", "latest-published-version": v - 1})
	}
	return map[string]any{"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": uuid}}, "updates": updates}
}

// settle records the outcome of an answer: a transport error or a 5xx is
// unknown (it may have applied), 200 is ok, anything else a definite fail.
func (op *Op) settle(status int, err error) string {
	switch {
	case err != nil || status >= 500:
		op.Outcome = OutcomeUnknown
		if err == nil {
			op.Answer = status
		}
	case status == http.StatusOK:
		op.Outcome, op.Status = OutcomeOK, status
	default:
		op.Outcome, op.Status = OutcomeFail, status
	}
	return op.Outcome
}
