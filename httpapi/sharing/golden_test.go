package sharing_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/goldentables"
	"github.com/raftcat/raftcat/internal/parquettest"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// goldenRows are the row counts of every version of the repository's
// real Delta tables.
var goldenRows = goldentables.Rows

// sharedName is a golden table's name as a catalog name (no dashes).
func sharedName(dir string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(dir) }

// lake is a three-node cluster sharing every golden table (history
// enabled) in share "lake", schema "golden", with a recipient holding a
// grant on it.
type lake struct {
	nodes []*testcluster.Node
	prov  provider
	prof  profile
}

func startLake(t *testing.T, opts testcluster.Options) *lake {
	t.Helper()
	nodes := testcluster.Start(t, 3, opts)
	testcluster.Leader(t, nodes)
	p := provider{t: t, url: nodes[1].URL}
	p.schema("golden")
	p.share("lake")
	for dir := range goldenRows {
		name := sharedName(dir)
		p.registerExternal("golden", name, copyTable(t, dir))
		p.add("lake", "unity.golden."+name, "golden."+name, true)
	}
	prof := p.recipient("analyst")
	p.grant("lake", "analyst")
	return &lake{nodes: nodes, prov: p, prof: prof}
}

// on is the lake's profile pointed at another node.
func (l *lake) on(i int) profile {
	p := l.prof
	p.Endpoint = strings.Replace(p.Endpoint, l.nodes[1].URL, l.nodes[i].URL, 1)
	return p
}

// Every version of every golden table, queried by version through every
// node as the Python client's format autodetection does, adds up to the
// table's row count; files without stats are counted from their Parquet
// footers read through the signed URLs.
func TestGoldenTablesAtEveryVersion(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	i := 0
	for dir, want := range goldenRows {
		for v, rows := range want {
			c := l.on(i % 3).client(t)
			c.caps = pyDetect
			i++
			a := c.query(tablePath("lake", "golden", sharedName(dir)), map[string]any{"version": v}).mustOK(t)
			if got := a.header.Get("Delta-Table-Version"); got != fmt.Sprint(v) {
				t.Fatalf("%s v%d: Delta-Table-Version %q", dir, v, got)
			}
			if got := a.rows(t); got != rows {
				t.Errorf("%s v%d: %d rows, want %d", dir, v, got, rows)
			}
		}
	}
}

// The change data feed of the CDF tables returns the change rows each
// commit wrote: inserts from adds, deletes from removes, and the rows of
// the change-data files by their _change_type.
func TestGoldenChangeDataFeed(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	c := l.prof.client(t)
	want := map[string]map[int64]map[string]int64{
		"cdf-table": {0: {"insert": 10}, 1: {"update_preimage": 3, "update_postimage": 3},
			2: {"update_preimage": 3, "update_postimage": 3}, 3: {"delete": 1}},
		"cdc_ict_table": {1: {"insert": 4}, 2: {"delete": 2}, 3: {"update_preimage": 2, "update_postimage": 2}},
	}
	for dir, byVersion := range want {
		a := c.ndjson(http.MethodGet, tablePath("lake", "golden", sharedName(dir))+"/changes?startingVersion=0", nil).mustOK(t)
		got := changeRows(t, a)
		for v, kinds := range byVersion {
			for kind, n := range kinds {
				if got[v][kind] != n {
					t.Errorf("%s v%d: %d %s rows, want %d (all: %v)", dir, v, got[v][kind], kind, n, got)
				}
			}
		}
		if len(got) != len(byVersion) {
			t.Errorf("%s: changes at versions %v, want %v", dir, got, byVersion)
		}
	}
}

// changeRows counts a parquet-format change feed's rows by version and
// change type, reading the files through their URLs.
func changeRows(t *testing.T, a answer) map[int64]map[string]int64 {
	t.Helper()
	out := map[int64]map[string]int64{}
	count := func(v int64, kind string, n int64) {
		if out[v] == nil {
			out[v] = map[string]int64{}
		}
		out[v][kind] += n
	}
	for _, f := range a.of("add") {
		stats, _ := f["stats"].(string)
		count(int64(f["version"].(float64)), "insert", fileRows(t, f["url"].(string), stats, 0))
	}
	for _, f := range a.of("remove") {
		count(int64(f["version"].(float64)), "delete", fileRows(t, f["url"].(string), "", 0))
	}
	for _, f := range a.of("cdf") {
		status, raw := fetch(t, f["url"].(string))
		if status != 200 {
			t.Fatalf("cdf file: %d", status)
		}
		kinds, err := parquettest.StringColumn(raw, "_change_type")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kinds {
			count(int64(f["version"].(float64)), k, 1)
		}
	}
	return out
}
