package lance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// reply is an answer received off the test goroutine: testcluster.Do
// calls t.Fatalf, which only the test goroutine may, so the concurrent
// parts of these tests send with send and report errors as values.
type reply struct {
	status int
	body   map[string]any
	raw    []byte
	err    error
}

func (r reply) code() int {
	c, _ := r.body["code"].(float64)
	return int(c)
}

// conflict reports whether r is Lance's 409 {error, code: 14}.
func (r reply) conflict() bool {
	msg, _ := r.body["error"].(string)
	return r.err == nil && r.status == 409 && r.code() == 14 && msg != ""
}

func (r reply) String() string {
	if r.err != nil {
		return r.err.Error()
	}
	return fmt.Sprintf("%d %s", r.status, r.raw)
}

var sendClient = &http.Client{Timeout: 30 * time.Second}

// retried counts the requests send sent again.
var retried atomic.Int64

// send is a goroutine-safe request to a node's Lance API: path gets
// ?delimiter=%24 like every request of a real client; a string body is
// sent verbatim, any other non-nil body as JSON. Like the Lance client,
// it sends the same request again while the answer is 503/17 (no
// leader: one is being elected) or none came, for up to 20 s: every
// request these tests send may be repeated, as an exact replay of a
// version/create (or of a batch of them) whose entry applied is answered
// with the recorded versions.
func send(nd *testcluster.Node, method, p string, body any) reply {
	sep := "?"
	if strings.Contains(p, "?") {
		sep = "&"
	}
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return reply{err: err}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := sendOnce(method, nd.URL+lance.Prefix+p+sep+"delimiter=%24", raw, body != nil)
		if (r.err == nil && !(r.status == 503 && r.code() == 17)) || time.Now().After(deadline) {
			return r
		}
		retried.Add(1)
	}
}

func sendOnce(method, u string, raw []byte, hasBody bool) reply {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := sendClient.Do(req)
	if err != nil {
		return reply{err: fmt.Errorf("%s %s: %w", method, u, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	out := reply{status: resp.StatusCode, raw: body, err: err}
	if len(body) > 0 {
		_ = json.Unmarshal(body, &out.body)
	}
	return out
}

// stageObject writes a staging manifest as a Lance client does, off the
// test goroutine, and returns its store-relative path.
func (w *warehouse) stageObject(tableLoc string, v int64, data string) (string, error) {
	loc := fmt.Sprintf("%s/_versions/%020d.manifest-%s", tableLoc, ^uint64(0)-uint64(v), uuid.NewString())
	if err := w.objects.Write(context.Background(), loc, []byte(data)); err != nil {
		return "", err
	}
	root, err := storage.Root(loc)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(loc, root), nil
}

// v2Final is the store-relative V2 final manifest of version v of a table.
func v2Final(t *testing.T, tableLoc string, v int64) string {
	return relative(t, fmt.Sprintf("%s/_versions/%020d.manifest", tableLoc, ^uint64(0)-uint64(v)))
}

// finalsIn lists the final manifests (V1 or V2 names, not staging files)
// in a table's _versions/ directory.
func (w *warehouse) finalsIn(t *testing.T, tableLoc string) []string {
	t.Helper()
	objs, err := w.objects.List(context.Background(), tableLoc+"/_versions/")
	if err != nil {
		t.Fatalf("list %s: %v", tableLoc, err)
	}
	var out []string
	for _, o := range objs {
		if strings.HasSuffix(o.Location, ".manifest") {
			out = append(out, relative(t, o.Location))
		}
	}
	return out
}

func (c *client) setupNamespaces() {
	c.ok(c.post("/v1/namespace/lake/create", map[string]any{"id": []string{"lake"}}))
	c.ok(c.post("/v1/namespace/"+esc("lake", "ns")+"/create", map[string]any{"id": []string{"lake", "ns"}}))
}

// L-33: writers racing for the same version of one table, each with a
// staging manifest of its own, through different nodes. Exactly one
// wins; every other gets 409/14; the final manifest holds the winner's
// bytes and the version is recorded once.
//
// Each round is one race; RAFTCAT_LANCE_RACE_ROUNDS=n runs n rounds
// instead of 5, to look for a race that only shows now and then.
func TestConcurrentVersionCreate(t *testing.T) {
	rounds := int64(5)
	if n, err := strconv.ParseInt(os.Getenv("RAFTCAT_LANCE_RACE_ROUNDS"), 10, 64); err == nil && n > 0 {
		rounds = n
	}
	versionRace(t, fileWarehouse(t), rounds)
}

// The same race with manifests in a real S3-compatible server, whose
// create-only writes are conditional puts.
func TestConcurrentVersionCreateS3(t *testing.T) { versionRace(t, s3Warehouse(t), 5) }

func versionRace(t *testing.T, w *warehouse, rounds int64) {
	const writers = 8
	retried.Store(0)
	defer func() { t.Logf("%d requests sent again after 503/17", retried.Load()) }()
	c := newClient(t, w)
	c.setupNamespaces()
	tl := w.table("race")
	c.ok(c.post("/v1/table/"+esc("lake", "ns", "race")+"/declare", map[string]any{"location": tl}))
	createPath := "/v1/table/" + esc("lake", "ns", "race") + "/version/create"

	for v := int64(1); v <= rounds; v++ {
		staged, data := make([]string, writers), make([]string, writers)
		for i := range writers {
			data[i] = fmt.Sprintf("manifest of version %d by writer %d (%s)", v, i, uuid.NewString())
			staged[i] = w.stage(t, tl, v, data[i])
		}
		replies := make([]reply, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				replies[i] = send(c.nodes[i%len(c.nodes)], "POST", createPath, versionBody("race", v, staged[i], len(data[i])))
			}()
		}
		close(start)
		wg.Wait()
		testcluster.Leader(t, c.nodes)

		winner := -1
		for i, r := range replies {
			switch {
			case r.err == nil && r.status == 200:
				if winner >= 0 {
					t.Fatalf("v%d: writers %d and %d both won: %s / %s", v, winner, i, replies[winner], r)
				}
				winner = i
			case r.conflict():
			default:
				t.Fatalf("v%d writer %d: want 200 or 409/14, got %s", v, i, r)
			}
		}
		if winner < 0 {
			t.Fatalf("v%d: no writer won: %v", v, replies)
		}
		got := replies[winner].body["version"].(map[string]any)
		final := v2Final(t, tl, v)
		if got["version"] != float64(v) || got["manifest_path"] != final || got["manifest_size"] != float64(len(data[winner])) {
			t.Fatalf("v%d: winner's answer %s, want the final %s", v, replies[winner], final)
		}
		if b := w.read(t, final); b != data[winner] {
			t.Fatalf("v%d: the final manifest holds %q (empty: missing), want the winner's (writer %d) %q", v, b, winner, data[winner])
		}
		if w.read(t, staged[winner]) != "" {
			t.Errorf("v%d: the winner's staging manifest was left", v)
		}
		// Exactly one record of v, with the winner's manifest, on every node.
		for range c.nodes {
			vs := c.list("race", "?descending=true").Body["versions"].([]any)
			if len(vs) != int(v) {
				t.Fatalf("v%d: %d versions listed, want %d", v, len(vs), v)
			}
			latest := vs[0].(map[string]any)
			if latest["version"] != float64(v) || latest["manifest_path"] != final || latest["manifest_size"] != float64(len(data[winner])) {
				t.Fatalf("v%d: listed %v", v, latest)
			}
		}
		// No final manifest but the recorded ones (a loser's must not stay).
		var want []string
		for u := int64(1); u <= v; u++ {
			want = append(want, v2Final(t, tl, u))
		}
		sort.Strings(want)
		if got := w.finalsIn(t, tl); !slices.Equal(got, want) {
			t.Fatalf("v%d: final manifests %v, want %v", v, got, want)
		}
	}
}

// batchAttempt is one batch commit sent by TestConcurrentBatchCommitsNeverInterleave.
type batchAttempt struct {
	id       string
	tables   []string
	versions map[string]int64 // the version each table was to get
	ok       bool
}

// Writers commit batches of versions of overlapping sets of tables, each
// version latest+1, retrying on 409/14. A batch lands on all its tables
// or on none, and batches never interleave: every table's history is
// 1..n without gaps, and each successful batch's id is in exactly the
// versions it answered with, a failed one's in none.
func TestConcurrentBatchCommitsNeverInterleave(t *testing.T) { batchRace(t, fileWarehouse(t), 10) }

func TestConcurrentBatchCommitsNeverInterleaveS3(t *testing.T) { batchRace(t, s3Warehouse(t), 10) }

func batchRace(t *testing.T, w *warehouse, batches int) {
	const writers, maxAttempts = 4, 200
	retried.Store(0)
	tables := []string{"a", "b", "c"}
	subsets := [][]string{{"a", "b"}, {"b", "c"}, {"a", "c"}, {"a", "b", "c"}}
	c := newClient(t, w)
	c.setupNamespaces()
	for _, tb := range tables {
		c.ok(c.post("/v1/table/"+esc("lake", "ns", tb)+"/declare", map[string]any{"location": w.table(tb)}))
	}

	attempts := make([][]batchAttempt, writers)
	errs := make(chan error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for k := range batches {
				sub := slices.Clone(subsets[(g+k)%len(subsets)])
				landed := false
				for a := 0; a < maxAttempts && !landed; a++ {
					nd := c.nodes[(g+k+a)%len(c.nodes)]
					at, err := tryBatch(w, nd, fmt.Sprintf("batch-%d-%d-%d", g, k, a), sub, rng)
					if err != nil {
						errs <- err
						return
					}
					attempts[g] = append(attempts[g], at)
					landed = at.ok
				}
				if !landed {
					errs <- fmt.Errorf("writer %d: batch %d did not land in %d attempts", g, k, maxAttempts)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	testcluster.Leader(t, c.nodes)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Each table's history: versions 1..n, each final manifest naming the
	// batch that made it.
	batchOf := map[string]map[int64]string{} // table → version → batch id
	for _, tb := range tables {
		batchOf[tb] = map[int64]string{}
		vs := c.list(tb, "?limit=1000").Body["versions"].([]any)
		for i, x := range vs {
			v := x.(map[string]any)
			if v["version"] != float64(i+1) {
				t.Fatalf("table %s: versions are not 1..%d without gaps: %v", tb, len(vs), vs)
			}
			id, _, ok := strings.Cut(w.read(t, v["manifest_path"].(string)), "\n")
			if !ok {
				t.Fatalf("table %s v%d: final manifest %s is missing or holds no batch id", tb, i+1, v["manifest_path"])
			}
			batchOf[tb][int64(i+1)] = id
		}
	}
	landedOn := map[string][]string{} // batch id → the tables whose history holds it
	for _, tb := range tables {
		for _, id := range batchOf[tb] {
			landedOn[id] = append(landedOn[id], tb)
		}
	}
	var succeeded []batchAttempt
	total, failed := 0, 0
	for _, as := range attempts {
		for _, at := range as {
			total++
			if !at.ok {
				failed++
				if on := landedOn[at.id]; len(on) > 0 {
					t.Errorf("failed batch %s left versions on %v", at.id, on)
				}
				continue
			}
			succeeded = append(succeeded, at)
			for _, tb := range at.tables {
				if got := batchOf[tb][at.versions[tb]]; got != at.id {
					t.Errorf("batch %s answered %s v%d, which holds batch %q", at.id, tb, at.versions[tb], got)
				}
			}
			if on := landedOn[at.id]; len(on) != len(at.tables) {
				t.Errorf("batch %s of %v landed on %v", at.id, at.tables, on)
			}
			delete(landedOn, at.id)
		}
	}
	if len(landedOn) > 0 {
		t.Errorf("versions of no successful batch: %v", landedOn)
	}
	if len(succeeded) != writers*batches {
		t.Errorf("%d batches succeeded, want %d", len(succeeded), writers*batches)
	}
	// One order of batches for all tables: two batches sharing tables are
	// in the same order on each of them.
	for i, x := range succeeded {
		for _, y := range succeeded[i+1:] {
			order := 0
			for _, tb := range x.tables {
				if _, ok := y.versions[tb]; !ok {
					continue
				}
				o := 1
				if x.versions[tb] > y.versions[tb] {
					o = -1
				}
				if order != 0 && o != order {
					t.Errorf("batches %s %v and %s %v interleave", x.id, x.versions, y.id, y.versions)
				}
				order = o
			}
		}
	}
	t.Logf("%d batch commits, %d refused with 409/14; %d requests sent again after 503/17", total, failed, retried.Load())
}

// tryBatch sends one batch commit creating version latest+1 of each of
// the tables, in a random order; a 409/14 is a failed attempt, any other
// failure an error.
func tryBatch(w *warehouse, nd *testcluster.Node, id string, tables []string, rng *rand.Rand) (batchAttempt, error) {
	at := batchAttempt{id: id, tables: tables, versions: map[string]int64{}}
	rng.Shuffle(len(tables), func(i, j int) { tables[i], tables[j] = tables[j], tables[i] })
	var ops []any
	for _, tb := range tables {
		r := send(nd, "POST", "/v1/table/"+esc("lake", "ns", tb)+"/version/list?descending=true&limit=1", "null")
		if r.err != nil || r.status != 200 {
			return at, fmt.Errorf("%s: latest of %s: %s", id, tb, r)
		}
		v := int64(1)
		if vs := r.body["versions"].([]any); len(vs) > 0 {
			v = int64(vs[0].(map[string]any)["version"].(float64)) + 1
		}
		data := id + "\n" + tb + " v" + strconv.FormatInt(v, 10)
		staged, err := w.stageObject(w.table(tb), v, data)
		if err != nil {
			return at, err
		}
		at.versions[tb] = v
		ops = append(ops, op("create_table_version", versionBody(tb, v, staged, len(data))))
	}
	r := send(nd, "POST", "/v1/table/batch-commit", map[string]any{"operations": ops})
	switch {
	case r.conflict():
		return at, nil
	case r.err != nil || r.status != 200:
		return at, fmt.Errorf("%s: batch commit %v: %s", id, at.versions, r)
	}
	res, _ := r.body["results"].([]any)
	if len(res) != len(tables) {
		return at, fmt.Errorf("%s: %d results for %d operations: %s", id, len(res), len(tables), r)
	}
	for i, tb := range tables {
		v, _ := res[i].(map[string]any)["create_table_version"].(map[string]any)["version"].(map[string]any)
		mp, _ := v["manifest_path"].(string)
		if v["version"] != float64(at.versions[tb]) || !strings.Contains(mp, "/"+tb+".lance/_versions/") ||
			path.Base(mp) != fmt.Sprintf("%020d.manifest", ^uint64(0)-uint64(at.versions[tb])) {
			return at, fmt.Errorf("%s: result %d is %v, want %s v%d", id, i, v, tb, at.versions[tb])
		}
	}
	at.ok = true
	return at, nil
}
