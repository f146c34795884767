package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/raftcat/raftcat/storage"
)

// Transactions across formats.
//
// A group is three tables created empty together: a managed Delta table,
// an Iceberg table and a Lance table. Its clients only ever write it with
// POST /api/2.1/unity-catalog/transactions/commit, each transaction
// advancing all three by one version: Delta add-commit of version n, an
// Iceberg snapshot of sequence number n on the current snapshot, Lance
// version n. So, as long as every transaction lands whole or not at all,
// the three tables are always at the same version n and their version k
// was made by the same transaction, whose id they carry: the Delta file
// name ("<k>.tx<id>.json"), the Iceberg snapshot id and the Lance
// version's metadata (chaos_tx).
//
// That makes the model small: a group is one porcupine key whose state is
// a tableState like a single table's, the list of transaction ids by
// version. A transaction is one commit of the next version asserting the
// current head (the Iceberg base); a load of any of the three tables (one
// request, so a load of the group is three operations) observes the
// group's version and head. Linearizability then checks each table's
// versions never go backwards or skip, and that a transaction of unknown
// outcome applied to all three or to none as each load saw them. After
// healing, checkTransactions proves atomicity on the final contents of
// the three tables: every acknowledged transaction present in all of
// them, no transaction (acknowledged, refused or of unknown outcome) in
// some but not the others, versions gap-free and equal.

// The tables of a group, in the order of a transaction's operations.
const (
	PartDelta   = "delta"
	PartIceberg = "iceberg"
	PartLance   = "lance"
)

var txParts = []string{PartDelta, PartIceberg, PartLance}

// TransactionsPath is the route of transactions across formats.
const TransactionsPath = "/api/2.1/unity-catalog/transactions/commit"

// lanceBase is where the Lance Namespace REST API is served.
const lanceBase = "/lance/v1"

// lanceTxKey is the Lance version metadata key naming its transaction.
const lanceTxKey = "chaos_tx"

func (op Op) validatePart() error {
	if op.Part == "" {
		if op.Protocol == ProtocolTransactions && op.Op == OpLoad {
			return fmt.Errorf("a transactions load names no part")
		}
		return nil
	}
	if op.Protocol != ProtocolTransactions {
		return fmt.Errorf("part %q on a %q operation", op.Part, op.Protocol)
	}
	for _, p := range txParts {
		if op.Part == p {
			return nil
		}
	}
	return fmt.Errorf("unknown part %q", op.Part)
}

// stepTransaction is a transaction on a group: it applies if its version
// is the next and its base the current head (as Delta, Iceberg and Lance
// each check their part). A refusal constrains the state only when it
// names the Delta operation (version taken) or the Iceberg one (stale
// base) with a 409: a Lance 409 may come from a final manifest left by
// another transaction of unknown outcome, and other refusals (shape,
// throttling) say nothing about the state.
func stepTransaction(s tableState, op Op) (bool, tableState) {
	applies := op.Version == s.latest()+1 && op.Base == s.head()
	switch op.Outcome {
	case OutcomeOK:
		return applies, s.withCommit(op.FileName)
	case OutcomeFail:
		return !applies || !refusalExcludesApply(op), s
	}
	if applies { // unknown outcome: linearized as applied; at the end it is as if it never was
		return true, s.withCommit(op.FileName)
	}
	return true, s
}

// refusalExcludesApply reports whether a refused transaction proves its
// version taken or its base stale, so that neither it nor an identical
// earlier attempt can apply after the answer.
func refusalExcludesApply(op Op) bool {
	return op.Status == http.StatusConflict && (op.Part == PartDelta || op.Part == PartIceberg)
}

func describeTransaction(op Op) string {
	if op.Op == OpLoad {
		return fmt.Sprintf("load %s -> v%d %s %s", op.Part, op.LatestVersion, op.Head, op.Outcome)
	}
	s := fmt.Sprintf("tx %s v%d on %q -> %s", op.FileName, op.Version, op.Base, op.Outcome)
	if op.Status != 0 {
		s += " " + strconv.Itoa(op.Status)
	}
	if op.Part != "" {
		s += " at " + op.Part
	}
	return s
}

// txGroup is one group's three tables.
type txGroup struct {
	name        string // the key its operations are recorded under
	delta       string // Delta table name (unity.default)
	uuid        string // and id
	iceberg     string // Iceberg table name (unity.chaos)
	icebergPath string
	lance       string // Lance table name (unity$chaos)
	lanceLoc    string // its location: staging manifests go to its _versions/
	catalog     string // the Iceberg warehouse (catalog) name
	objects     *storage.Blobs
}

// lancePath is the path of a Lance table route (op: describe, declare,
// version/list) with "$" as the delimiter.
func (g *txGroup) lancePath(op string) string {
	return lanceBase + "/table/" + lanceID("unity", icebergNamespace, g.lance) + "/" + op + "?delimiter=%24"
}

// lanceID is a Lance path id: the names joined by "$", escaped.
func lanceID(names ...string) string { return strings.ReplaceAll(strings.Join(names, "$"), "$", "%24") }

func setupTransactions(cfg Config, urls []string, rng *rand.Rand, rec *recorder) ([]runner, finalLoader, error) {
	base := urls[0]
	cat, err := openIceberg(base) // also makes the schema unity.chaos
	if err != nil {
		return nil, nil, err
	}
	status, out, err := call(http.MethodPost, base+lanceBase+"/namespace/"+lanceID("unity", icebergNamespace)+"/create?delimiter=%24",
		map[string]any{"mode": "exist_ok"})
	if err != nil || status != http.StatusOK {
		return nil, nil, fmt.Errorf("create lance namespace unity$%s: %d %v %v", icebergNamespace, status, out, err)
	}
	objects := storage.NewBlobs(storage.BlobOptions{})
	groups := map[string]*txGroup{}
	var clients []runner
	for t := 0; t < cfg.Tables; t++ {
		name := tableName(cfg, t)
		g := &txGroup{name: name, delta: name + "_delta", iceberg: name + "_iceberg", lance: name + "_lance", catalog: cat.prefix,
			objects: objects}
		if g.uuid, err = createTable(base, g.delta); err != nil {
			return nil, nil, err
		}
		if err := cat.create(base, g.iceberg); err != nil {
			return nil, nil, err
		}
		g.icebergPath = cat.table(g.iceberg)
		status, out, err := call(http.MethodPost, base+g.lancePath("declare"), map[string]any{})
		if err != nil || status != http.StatusOK {
			return nil, nil, fmt.Errorf("declare lance table %s: %d %v %v", g.lance, status, out, err)
		}
		if g.lanceLoc, _ = out["location"].(string); g.lanceLoc == "" {
			return nil, nil, fmt.Errorf("declare lance table %s: no location in %v", g.lance, out)
		}
		groups[name] = g
		for k := 0; k < cfg.ClientsPerTable; k++ {
			clients = append(clients, &txClient{id: len(clients), g: g, urls: urls,
				rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), rec: rec})
		}
	}
	final := func(base string, op Op) Op { return txFinalLoad(base, groups[op.Table], op) }
	return clients, final, nil
}

// txClient is one sequential writer of a group: load its three tables,
// and when they agree, send one transaction advancing all three. A
// refusal makes it start over from a new load. An unknown outcome is
// found out by loading again: if any table moved on, the transaction has
// applied or never will (its Delta version is taken, its Iceberg base no
// longer current); if all three are still where they were it may yet
// arrive, so it is retried identically (with the same staging manifest).
type txClient struct {
	id   int
	g    *txGroup
	urls []string
	rng  *rand.Rand
	rec  *recorder
	seq  int
}

func (c *txClient) url() string { return c.urls[c.rng.IntN(len(c.urls))] }

func (c *txClient) tableName() string { return c.g.name }

// finalParts makes the final loads load each table of the group.
func (c *txClient) finalParts() []string { return txParts }

// txHead is a group as one load of its three tables saw it.
type txHead struct {
	version int64  // every table's latest version
	tx      string // the transaction that made it ("" at version 0)
	ice     icebergHead
}

func (c *txClient) run(stop <-chan struct{}) {
	for !stopped(stop) {
		h, ok, same := c.load()
		switch {
		case !ok:
			time.Sleep(50 * time.Millisecond) // client back-off after an unavailable answer
		case !same:
			time.Sleep(10 * time.Millisecond) // a transaction landed between the loads: load again
		default:
			c.commit(h, stop)
		}
	}
}

// load loads the three tables, one request each in random order. ok:
// every load answered; same: they show the same version and transaction.
func (c *txClient) load() (txHead, bool, bool) {
	var seen [3]Op
	var h txHead
	for _, i := range c.rng.Perm(len(txParts)) {
		op := Op{Protocol: ProtocolTransactions, Client: c.id, Table: c.g.name, Op: OpLoad, Part: txParts[i], InvokeNs: c.rec.now()}
		var ice icebergHead
		op, ice = loadPart(c.url(), c.g, op, false)
		op.CompleteNs = c.rec.now()
		c.rec.add(op)
		if op.Outcome != OutcomeOK {
			return h, false, false
		}
		if txParts[i] == PartIceberg {
			h.ice = ice
		}
		seen[i] = op
	}
	h.version, h.tx = seen[1].LatestVersion, seen[1].Head
	for _, op := range seen {
		if op.LatestVersion != h.version || (op.Head != "" && op.Head != h.tx) {
			return h, true, false
		}
	}
	return h, true, true
}

// loadPart loads one table of a group into op (a load, or with final the
// final load with every tracked version's transaction in Commits). The
// Iceberg load also returns the table's head.
func loadPart(base string, g *txGroup, op Op, final bool) (Op, icebergHead) {
	var h icebergHead
	switch op.Part {
	case PartDelta:
		status, body, err := call(http.MethodGet, base+deltaBase+"/tables/"+g.delta, nil)
		latest, ok := body["latest-table-version"].(float64)
		if op.settle(status, err) == OutcomeOK && !ok {
			op.Outcome, op.Status = OutcomeUnknown, 0 // an answer that cannot be read observed nothing
		}
		if op.Outcome == OutcomeOK {
			op.LatestVersion = int64(latest)
			commits := map[int64]string{}
			cms, _ := body["commits"].([]any)
			for _, cm := range cms {
				m, _ := cm.(map[string]any)
				v, _ := m["version"].(float64)
				file, _ := m["file-name"].(string)
				commits[int64(v)] = txOfDeltaFile(file)
			}
			op.Head = commits[op.LatestVersion] // "" when untracked: the model does not check it
			if final {
				op.Commits = commits
			}
		}
	case PartIceberg:
		status, md, err := loadIceberg(base + g.icebergPath)
		if op.settle(status, err) == OutcomeOK {
			if h, err = md.head(); err != nil {
				op.Outcome, op.Status = OutcomeUnknown, 0
			}
			op.LatestVersion, op.Head = h.seq, h.base()
			if final {
				op.Commits = md.commits()
			}
		}
	case PartLance:
		versions, status, err := lanceVersions(base, g, !final)
		if op.settle(status, err) == OutcomeOK {
			op.Commits = map[int64]string{}
			for _, v := range versions {
				op.Commits[v.Version] = v.tx()
				if v.Version >= op.LatestVersion {
					op.LatestVersion, op.Head = v.Version, v.tx()
				}
			}
			if !final {
				op.Commits = nil
			} else {
				op.BadManifests = g.badManifests(versions)
			}
		}
	}
	return op, h
}

// txOfDeltaFile is the transaction a Delta commit file names, or the file
// name when it names none.
func txOfDeltaFile(file string) string {
	if _, rest, ok := strings.Cut(file, ".tx"); ok {
		if id, ok := strings.CutSuffix(rest, ".json"); ok {
			return id
		}
	}
	return file
}

func deltaTxFile(v int64, tx string) string { return fmt.Sprintf("%020d.tx%s.json", v, tx) }

type lanceVersion struct {
	Version      int64             `json:"version"`
	ManifestPath string            `json:"manifest_path"`
	Metadata     map[string]string `json:"metadata"`
}

// tx is the transaction that made the version (its manifest path when
// its metadata names none).
func (v lanceVersion) tx() string {
	if id := v.Metadata[lanceTxKey]; id != "" {
		return id
	}
	return v.ManifestPath
}

// lanceVersions lists a Lance table's versions: only the latest with
// latest, else every one (page by page). status 0 and err: no answer.
func lanceVersions(base string, g *txGroup, latest bool) ([]lanceVersion, int, error) {
	var all []lanceVersion
	token := ""
	for {
		q := "&limit=1000"
		if latest {
			q = "&descending=true&limit=1"
		}
		if token != "" {
			q += "&page_token=" + url.QueryEscape(token)
		}
		status, body, err := call(http.MethodPost, base+g.lancePath("version/list")+q, map[string]any{})
		if err != nil || status != http.StatusOK {
			return nil, status, err
		}
		raw, ok := body["versions"].([]any)
		if !ok {
			return nil, 0, fmt.Errorf("lance version list without versions: %v", body)
		}
		for _, x := range raw {
			m, _ := x.(map[string]any)
			v := lanceVersion{ManifestPath: fmt.Sprint(m["manifest_path"]), Metadata: map[string]string{}}
			n, _ := m["version"].(float64)
			v.Version = int64(n)
			md, _ := m["metadata"].(map[string]any)
			for k, x := range md {
				v.Metadata[k] = fmt.Sprint(x)
			}
			all = append(all, v)
		}
		token, _ = body["page_token"].(string)
		if latest || token == "" {
			return all, status, nil
		}
	}
}

// commit sends the transaction of version h.version+1 until its outcome
// is definite, found out, or the run ends.
func (c *txClient) commit(h txHead, stop <-chan struct{}) {
	c.seq++
	id := int64(c.id+1)*1_000_000_000 + int64(c.seq) // the Iceberg snapshot id: unique, exact as a JSON number
	tx, v := strconv.FormatInt(id, 10), h.version+1
	staging, err := c.stage(v, tx)
	if err != nil {
		time.Sleep(50 * time.Millisecond) // nothing was sent: nothing to record
		return
	}
	body := c.g.txBody(h, v, id, staging)
	for retried := false; ; {
		op := Op{Protocol: ProtocolTransactions, Client: c.id, Table: c.g.name, Op: OpCommit, Version: v,
			FileName: tx, Base: h.tx, InvokeNs: c.rec.now()}
		status, out, err := call(http.MethodPost, c.url()+TransactionsPath, body)
		op.CompleteNs = c.rec.now()
		if op.settle(status, err) == OutcomeFail {
			op.Part = failedPart(out)
		}
		c.rec.add(op)
		if op.Outcome == OutcomeFail && !retried {
			c.unstage(staging)
		}
		if op.Outcome != OutcomeUnknown || !c.stillAt(h, stop) {
			return
		}
		retried = true
	}
}

// stage writes the Lance staging manifest of version v, as a Lance client
// does, in the table's _versions/ directory; it returns its location.
func (c *txClient) stage(v int64, tx string) (string, error) {
	loc := fmt.Sprintf("%s/_versions/%020d.manifest-tx%s", strings.TrimRight(c.g.lanceLoc, "/"), ^uint64(0)-uint64(v), tx)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return loc, c.g.objects.Write(ctx, loc, []byte(stagedManifest(tx)))
}

// unstage removes a staging manifest no transaction will use, as a Lance
// client does after a refusal (best effort).
func (c *txClient) unstage(loc string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.g.objects.Delete(ctx, loc)
}

// stagedManifest is what a transaction's staging manifest holds (and so
// the final manifest of the version it made).
func stagedManifest(tx string) string { return "chaos transaction " + tx + "\n" }

// badManifests reads the manifest of every version (named relative to the
// root of the table's store) and says what it holds when it is not the
// one staged by the version's transaction.
func (g *txGroup) badManifests(versions []lanceVersion) map[int64]string {
	root, err := storage.Root(g.lanceLoc)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[int64]string{}
	for _, v := range versions {
		data, err := g.objects.Read(ctx, root+strings.TrimPrefix(v.ManifestPath, "/"))
		switch {
		case errors.Is(err, storage.ErrNotFound):
			out[v.Version] = "no manifest"
		case err != nil:
			out[v.Version] = "an unreadable manifest: " + err.Error()
		case string(data) != stagedManifest(v.tx()):
			if tx, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "chaos transaction "); ok {
				out[v.Version] = "the manifest staged by transaction " + tx
			} else {
				out[v.Version] = fmt.Sprintf("a manifest of %d bytes no transaction staged", len(data))
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// txBody is the transaction of version v: Delta add-commit of v, an
// Iceberg snapshot (id) on the loaded head, Lance version v.
func (g *txGroup) txBody(h txHead, v, id int64, staging string) map[string]any {
	tx := strconv.FormatInt(id, 10)
	d := deltaCommitBody(g.uuid, v, deltaTxFile(v, tx))
	d["catalog"], d["schema"], d["name"] = "unity", "default", g.delta
	ice := icebergCommitBody(nil, h.ice, id, time.Now().UnixMilli())
	delete(ice, "identifier")
	ice["catalog"], ice["namespace"], ice["name"] = g.catalog, []string{icebergNamespace}, g.iceberg
	lance := map[string]any{"create_table_version": map[string]any{"id": []string{"unity", icebergNamespace, g.lance},
		"version": v, "manifest_path": staging, "naming_scheme": "V2", "metadata": map[string]string{lanceTxKey: tx}}}
	return map[string]any{"operations": []any{map[string]any{PartDelta: d}, map[string]any{PartIceberg: ice},
		map[string]any{PartLance: lance}}}
}

// failedPart is the operation a refused transaction names in its error
// details (UC REST's ErrorInfo metadata), or "".
func failedPart(body map[string]any) string {
	details, _ := body["details"].([]any)
	for _, d := range details {
		m, _ := d.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		if op, _ := md["operation"].(string); op != "" {
			return op
		}
		if s, _ := md["operation_index"].(string); s != "" {
			if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(txParts) {
				return txParts[i]
			}
		}
	}
	return ""
}

// stillAt loads until a load of all three tables answers (or the run
// ends) and reports whether the group is still at h.
func (c *txClient) stillAt(h txHead, stop <-chan struct{}) bool {
	for {
		select {
		case <-stop:
			return false
		case <-time.After(50 * time.Millisecond): // retry back-off
		}
		if now, ok, same := c.load(); ok {
			return same && now.version == h.version && now.tx == h.tx
		}
	}
}

// txFinalLoad is the final load of one table of a group: its latest
// version and every version's transaction it still tracks (Delta: the
// commits not yet published; Iceberg and Lance: all).
func txFinalLoad(base string, g *txGroup, op Op) Op {
	op.Protocol = ProtocolTransactions
	if g == nil {
		op.Outcome = OutcomeUnknown
		return op
	}
	op, _ = loadPart(base, g, op, true)
	return op
}
