package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// IcebergBase is where the Iceberg REST catalog is served.
const IcebergBase = "/api/2.1/unity-catalog/iceberg"

// icebergNamespace holds the drill's Iceberg tables.
const icebergNamespace = "chaos"

// icebergMetadata is the part of a loaded table the workload reads.
type icebergMetadata struct {
	Location  string `json:"location"`
	Current   *int64 `json:"current-snapshot-id"`
	Snapshots []struct {
		ID       int64 `json:"snapshot-id"`
		Sequence int64 `json:"sequence-number"`
	} `json:"snapshots"`
}

// icebergHead is what a load tells a writer: the current snapshot (id 0
// and sequence number 0 when there is none) and the table's location.
type icebergHead struct {
	seq, id  int64
	location string
}

// base is the snapshot id a commit on this head asserts ("" for none).
func (h icebergHead) base() string {
	if h.seq == 0 {
		return ""
	}
	return strconv.FormatInt(h.id, 10)
}

// head finds the current snapshot and its sequence number.
func (m icebergMetadata) head() (icebergHead, error) {
	h := icebergHead{location: m.Location}
	if m.Current == nil || *m.Current == -1 {
		return h, nil
	}
	for _, s := range m.Snapshots {
		if s.ID == *m.Current {
			h.seq, h.id = s.Sequence, s.ID
			return h, nil
		}
	}
	return h, fmt.Errorf("current snapshot %d is not among the table's snapshots", *m.Current)
}

// commits maps each snapshot's sequence number to its id.
func (m icebergMetadata) commits() map[int64]string {
	out := map[int64]string{}
	for _, s := range m.Snapshots {
		out[s.Sequence] = strconv.FormatInt(s.ID, 10)
	}
	return out
}

// icebergCatalog addresses the Iceberg tables of one warehouse.
type icebergCatalog struct{ prefix string }

// openIceberg reads the warehouse's prefix from the config endpoint and
// makes sure the drill's namespace exists.
func openIceberg(base string) (icebergCatalog, error) {
	status, cfg, err := call(http.MethodGet, base+IcebergBase+"/v1/config?warehouse=unity", nil)
	if err != nil || status != http.StatusOK {
		return icebergCatalog{}, fmt.Errorf("iceberg config: %d %v %v", status, cfg, err)
	}
	overrides, _ := cfg["overrides"].(map[string]any)
	prefix, _ := overrides["prefix"].(string)
	if prefix == "" {
		return icebergCatalog{}, fmt.Errorf("iceberg config names no prefix: %v", cfg)
	}
	cat := icebergCatalog{prefix: prefix}
	status, out, err := call(http.MethodPost, base+cat.path("/namespaces"), map[string]any{"namespace": []string{icebergNamespace}})
	if err != nil || (status != http.StatusOK && status != http.StatusConflict) {
		return cat, fmt.Errorf("create namespace %s: %d %v %v", icebergNamespace, status, out, err)
	}
	return cat, nil
}

func (c icebergCatalog) path(rest string) string {
	return IcebergBase + "/v1/" + url.PathEscape(c.prefix) + rest
}

// table is the path of one of the drill's tables.
func (c icebergCatalog) table(name string) string {
	return c.path("/namespaces/" + icebergNamespace + "/tables/" + url.PathEscape(name))
}

// create creates an Iceberg table with one long column.
func (c icebergCatalog) create(base, name string) error {
	body := map[string]any{"name": name, "schema": map[string]any{"type": "struct", "schema-id": 0,
		"fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}}
	status, out, err := call(http.MethodPost, base+c.path("/namespaces/"+icebergNamespace+"/tables"), body)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("create iceberg table %s: %d %v %v", name, status, out, err)
	}
	return nil
}

// loadIceberg loads a table's metadata.
func loadIceberg(u string) (int, icebergMetadata, error) {
	status, raw, err := send(http.MethodGet, u, nil)
	var body struct {
		Metadata icebergMetadata `json:"metadata"`
	}
	if err == nil && status == http.StatusOK {
		err = json.Unmarshal(raw, &body)
	}
	return status, body.Metadata, err
}

// icebergClient is one sequential Iceberg writer: load, then commit a new
// snapshot with assert-ref-snapshot-id on the loaded one. A 409 means the
// base was stale. An unknown outcome is found out by loading again: if the
// table moved on (to this snapshot or another) the commit has applied or
// never will, and the writer starts over from that load; if the base is
// still current the commit may yet arrive, so it is retried identically
// (only one of the two can apply, both asserting the same base).
type icebergClient struct {
	id    int
	table string
	path  string
	ident map[string]any
	urls  []string
	rng   *rand.Rand
	rec   *recorder
	seq   int
}

func (c *icebergClient) url() string { return c.urls[c.rng.IntN(len(c.urls))] }

func (c *icebergClient) tableName() string { return c.table }

func (c *icebergClient) run(stop <-chan struct{}) {
	for !stopped(stop) {
		h, ok := c.load()
		if !ok {
			time.Sleep(50 * time.Millisecond) // client back-off after an unavailable answer
			continue
		}
		c.commit(h, stop)
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// load records a load: the current snapshot's sequence number and id.
func (c *icebergClient) load() (icebergHead, bool) {
	op := Op{Protocol: ProtocolIceberg, Client: c.id, Table: c.table, Op: OpLoad, InvokeNs: c.rec.now()}
	status, md, err := loadIceberg(c.url() + c.path)
	op.CompleteNs = c.rec.now()
	var h icebergHead
	if op.settle(status, err) == OutcomeOK {
		if h, err = md.head(); err != nil {
			op.Outcome, op.Status = OutcomeUnknown, 0 // an answer that cannot be read observed nothing
		}
		op.LatestVersion, op.Head = h.seq, h.base()
	}
	c.rec.add(op)
	return h, op.Outcome == OutcomeOK
}

// commit adds the next snapshot on base h until the outcome is definite,
// found out, or the run ends.
func (c *icebergClient) commit(h icebergHead, stop <-chan struct{}) {
	c.seq++
	id := int64(c.id+1)*1_000_000_000 + int64(c.seq) // unique in the table, exact as a JSON number
	body := icebergCommitBody(c.ident, h, id, time.Now().UnixMilli())
	for {
		op := Op{Protocol: ProtocolIceberg, Client: c.id, Table: c.table, Op: OpCommit, Version: h.seq + 1,
			FileName: strconv.FormatInt(id, 10), Base: h.base(), InvokeNs: c.rec.now()}
		status, _, err := send(http.MethodPost, c.url()+c.path, body)
		op.CompleteNs = c.rec.now()
		op.settle(status, err)
		c.rec.add(op)
		if op.Outcome != OutcomeUnknown || !c.stillAt(h, stop) {
			return
		}
	}
}

// stillAt loads until a load answers (or the run ends) and reports
// whether the table is still at h.
func (c *icebergClient) stillAt(h icebergHead, stop <-chan struct{}) bool {
	for {
		select {
		case <-stop:
			return false
		case <-time.After(50 * time.Millisecond): // retry back-off
		}
		if now, ok := c.load(); ok {
			return now.seq == h.seq && now.id == h.id
		}
	}
}

// icebergCommitBody is an append: a new snapshot on the loaded one, made
// the main branch, asserting the loaded one is still current.
func icebergCommitBody(ident map[string]any, h icebergHead, id, now int64) map[string]any {
	var parent any
	if h.seq > 0 {
		parent = h.id
	}
	snap := map[string]any{
		"snapshot-id":     id,
		"sequence-number": h.seq + 1,
		"timestamp-ms":    now,
		"manifest-list":   fmt.Sprintf("%s/metadata/snap-%d.avro", h.location, id),
		"summary":         map[string]any{"operation": "append"},
		"schema-id":       0,
	}
	if parent != nil {
		snap["parent-snapshot-id"] = parent
	}
	return map[string]any{"identifier": ident,
		"requirements": []any{map[string]any{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}},
		"updates": []any{map[string]any{"action": "add-snapshot", "snapshot": snap},
			map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id}}}
}

// icebergFinalLoad is the final load of an Iceberg table: the current
// snapshot and every snapshot's sequence number and id.
func icebergFinalLoad(u string, op Op) Op {
	op.Protocol = ProtocolIceberg
	status, md, err := loadIceberg(u)
	h, herr := md.head()
	if err != nil || status != http.StatusOK || herr != nil {
		op.Outcome, op.Status = OutcomeUnknown, status
		return op
	}
	op.Outcome, op.Status = OutcomeOK, status
	op.LatestVersion, op.Head, op.Commits = h.seq, h.base(), md.commits()
	return op
}
