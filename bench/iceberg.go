package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// icebergBase is where raftcat serves the Iceberg REST catalog.
const icebergBase = "/api/2.1/unity-catalog/iceberg"

// icebergNamespace holds the bench's Iceberg tables.
const icebergNamespace = "bench"

// icebergSystem drives the Iceberg REST commit path of the same cluster
// the Delta workload runs on.
type icebergSystem struct {
	rc     *raftcatSystem
	tables []string // URL of each table
	acked  tableCounts
}

func (s *icebergSystem) name() string { return "iceberg" }

func (s *icebergSystem) pids() []int { return s.rc.pids() }

func (s *icebergSystem) close() {} // the cluster is the Delta system's

func (s *icebergSystem) verify(ctx context.Context, f inFlight) error {
	return s.acked.check(func(t int) (int64, error) {
		w := &icebergWriter{s: s.rc, url: s.tables[t]}
		h, err := w.load(ctx)
		return h.Sequence, err
	}, f)
}

func (s *icebergSystem) prepare(ctx context.Context, tables, clients int) ([]committer, error) {
	targets, err := s.rc.targets(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := s.namespace(targets[0])
	if err != nil {
		return nil, err
	}
	run := fmt.Sprintf("bench_%d", time.Now().UnixNano()%1e12)
	names := make([]string, tables)
	err = createAll(ctx, tables, func(i int) error {
		names[i] = fmt.Sprintf("%s_%d", run, i)
		return s.create(targets[i%len(targets)]+ns, names[i])
	})
	if err != nil {
		return nil, err
	}
	s.acked = make(tableCounts, tables)
	for _, n := range names {
		s.tables = append(s.tables, targets[0]+ns+"/tables/"+n)
	}
	out := make([]committer, clients)
	for i := range out {
		t := i % tables
		ident := fmt.Sprintf(`{"namespace":[%q],"name":%q}`, icebergNamespace, names[t])
		out[i] = &icebergWriter{s: s.rc, conn: s.rc.newConn(), url: targets[i%len(targets)] + ns + "/tables/" + names[t], ident: ident, id: i, acked: &s.acked[t]}
	}
	return out, nil
}

// namespace reads the warehouse prefix from the config endpoint, creates
// the bench's namespace if it is missing and returns its path.
func (s *icebergSystem) namespace(base string) (string, error) {
	var cfg struct {
		Overrides map[string]string `json:"overrides"`
	}
	code, err := s.rc.do(http.MethodGet, base+icebergBase+"/v1/config?warehouse=unity", nil, &cfg)
	if err != nil || code != http.StatusOK || cfg.Overrides["prefix"] == "" {
		return "", fmt.Errorf("iceberg config: status %d, overrides %v: %v", code, cfg.Overrides, err)
	}
	root := icebergBase + "/v1/" + url.PathEscape(cfg.Overrides["prefix"]) + "/namespaces"
	code, err = s.rc.do(http.MethodPost, base+root, map[string]any{"namespace": []string{icebergNamespace}}, nil)
	if err != nil || (code != http.StatusOK && code != http.StatusConflict) {
		return "", fmt.Errorf("create namespace %s: status %d: %v", icebergNamespace, code, err)
	}
	return root + "/" + icebergNamespace, nil
}

// create creates an Iceberg table with one long column.
func (s *icebergSystem) create(ns, name string) error {
	body := map[string]any{"name": name, "schema": map[string]any{"type": "struct", "schema-id": 0,
		"fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}}
	if code, err := s.rc.do(http.MethodPost, ns+"/tables", body, nil); err != nil || code != http.StatusOK {
		return fmt.Errorf("create iceberg table %s: status %d: %v", name, code, err)
	}
	return nil
}

// icebergWriter is one Iceberg writer: it loads the table, then commits
// an append (a new snapshot, made the main branch) asserting with
// assert-ref-snapshot-id that the loaded snapshot is still current, and
// on 409 reloads and retries. Like the Delta writer's backfill report, the
// commit also expires the loaded snapshot's parent (remove-snapshots), so
// a table keeps two snapshots and its metadata stays the same size however
// long the run.
type icebergWriter struct {
	s     *raftcatSystem
	conn  *connClient // nil: the shared client
	url   string
	ident string // the commit's identifier, as JSON
	id    int
	seq   int
	buf   bytes.Buffer
	acked *atomic.Int64
	times requestTimes
}

func (w *icebergWriter) requests() *requestTimes { return &w.times }
func (w *icebergWriter) closeConn()              { w.conn.close() }

// icebergHead is the current snapshot of a loaded table (Sequence 0 when
// there is none).
type icebergHead struct {
	ID, Parent, Sequence int64
	HasParent            bool
	Location             string
}

func (w *icebergWriter) commit(ctx context.Context) (int, error) {
	conflicts := 0
	for {
		h, err := w.load(ctx)
		if err != nil {
			return conflicts, err
		}
		w.seq++
		body := icebergAppend(w.ident, h, int64(w.id+1)*1_000_000_000+int64(w.seq), time.Now().UnixMilli())
		start := time.Now()
		// A commit once sent is waited for, also when the window ends: a
		// cancelled one would leave its outcome unknown.
		code, _, err := w.s.sendOn(context.WithoutCancel(ctx), w.conn, http.MethodPost, w.url, bytes.NewReader(body), &w.buf)
		w.times.attempts.since(start)
		switch {
		case err != nil:
			return conflicts, fmt.Errorf("commit: %v", err)
		case code == http.StatusOK:
			w.acked.Add(1)
			return conflicts, nil
		case code == http.StatusConflict:
			conflicts++ // another writer moved the branch: reload and retry
		default:
			return conflicts, fmt.Errorf("commit: status %d: %.200s", code, w.buf.Bytes())
		}
	}
}

// icebergAppend is the commit of snapshot id on the loaded head h.
func icebergAppend(ident string, h icebergHead, id, now int64) []byte {
	base, parent, expire := "null", "", ""
	if h.Sequence > 0 {
		base = fmt.Sprint(h.ID)
		parent = fmt.Sprintf(`"parent-snapshot-id":%d,`, h.ID)
		if h.HasParent {
			expire = fmt.Sprintf(`,{"action":"remove-snapshots","snapshot-ids":[%d]}`, h.Parent)
		}
	}
	return fmt.Appendf(nil, `{"identifier":%s,"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":%s}],`+
		`"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,`+
		`"manifest-list":%q,"summary":{"operation":"append"},"schema-id":0}},`+
		`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}%s]}`,
		ident, base, id, parent, h.Sequence+1, now, fmt.Sprintf("%s/metadata/snap-%d.avro", h.Location, id), id, expire)
}

// load returns the table's current snapshot.
func (w *icebergWriter) load(ctx context.Context) (icebergHead, error) {
	start := time.Now()
	code, b, err := w.s.sendOn(ctx, w.conn, http.MethodGet, w.url, nil, &w.buf)
	w.times.loads.since(start)
	if err != nil || code != http.StatusOK {
		return icebergHead{}, fmt.Errorf("load: status %d: %v", code, err)
	}
	var answer struct {
		Metadata struct {
			Location  string `json:"location"`
			Current   *int64 `json:"current-snapshot-id"`
			Snapshots []struct {
				ID       int64  `json:"snapshot-id"`
				Parent   *int64 `json:"parent-snapshot-id"`
				Sequence int64  `json:"sequence-number"`
			} `json:"snapshots"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return icebergHead{}, fmt.Errorf("load: %v", err)
	}
	md := answer.Metadata
	h := icebergHead{Location: md.Location}
	if md.Current == nil || *md.Current == -1 {
		return h, nil
	}
	for _, s := range md.Snapshots {
		if s.ID == *md.Current {
			h.ID, h.Sequence, h.HasParent = s.ID, s.Sequence, s.Parent != nil
			if s.Parent != nil {
				h.Parent = *s.Parent
			}
			return h, nil
		}
	}
	return h, fmt.Errorf("load: current snapshot %d is not among the snapshots", *md.Current)
}
