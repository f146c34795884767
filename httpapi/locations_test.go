package httpapi_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

func deltaExternal(name, location string) map[string]any {
	b := externalBody(name, location)
	b["data-source-format"] = "DELTA"
	return b
}

// Overlapping table locations are refused on both protocols, with the
// state unchanged: the same location, one inside another, one above.
func TestFastOverlappingLocationsAreRefused(t *testing.T) {
	a := startAPI(t)
	_, sch := a.newSchema()
	a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, "base", "DELTA", "s3://lake/dir/base"))
	for name, loc := range map[string]string{"same": "s3://lake/dir/base", "s3a": "s3a://lake/dir/base/", "inside": "s3://lake/dir/base/p", "above": "s3://lake/dir"} {
		t.Run("UC REST "+name, func(t *testing.T) {
			r := a.with(t).do(http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, "uc_"+name, "DELTA", loc))
			ucErr(t, r, http.StatusBadRequest, "INVALID_ARGUMENT", "LOCATION_OVERLAP")
		})
		t.Run("Delta API "+name, func(t *testing.T) {
			r := a.with(t).do(http.MethodPost, deltaPrefix+"/catalogs/unity/schemas/"+sch+"/tables", deltaExternal("d_"+name, loc))
			deltaErr(t, r, http.StatusBadRequest, "InvalidParameterValueException", "LOCATION_OVERLAP")
		})
	}
	t.Run("catalog root inside a table", func(t *testing.T) {
		r := a.with(t).do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": uniq("c"), "storage_root": "s3://lake/dir/base/cat"})
		ucErr(t, r, http.StatusBadRequest, "INVALID_ARGUMENT", "LOCATION_OVERLAP")
	})
	t.Run("external table at a catalog root", func(t *testing.T) {
		cat := uniq("rooted")
		a := a.with(t)
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": cat, "storage_root": "s3://croot/root"})
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "s", "catalog_name": cat})
		b := ucTableBody("s", "at_root", "DELTA", "s3://croot/root")
		b["catalog_name"] = cat
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", b), http.StatusBadRequest, "INVALID_ARGUMENT", "managed storage")
	})
	a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, "sibling", "DELTA", "s3://lake/dir/base2"))
	r := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables?catalog_name=unity&schema_name="+sch, nil)
	if n := len(arr(t, r.obj(t)["tables"])); n != 2 {
		t.Fatalf("%d tables stored, want base and sibling: %s", n, r.raw)
	}
}

// Creates racing for one location are decided by the state machine:
// exactly one of them wins, whichever protocol each came through.
func TestRacingCreatesForOneLocationHaveOneWinner(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	a := &api{t: t, base: nodes[0].URL}
	_, sch := a.newSchema()
	const racers = 8
	statuses := make([]int, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("racer%d", i)
			if i%2 == 0 {
				statuses[i] = a.do(http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, name, "DELTA", "s3://race/t")).status
			} else {
				statuses[i] = a.do(http.MethodPost, deltaPrefix+"/catalogs/unity/schemas/"+sch+"/tables", deltaExternal(name, "s3://race/t")).status
			}
		}()
	}
	wg.Wait()
	won := 0
	for _, s := range statuses {
		switch s {
		case http.StatusOK:
			won++
		case http.StatusBadRequest:
		default:
			t.Fatalf("statuses %v", statuses)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates won the location, want exactly 1 (statuses %v)", won, statuses)
	}
}

// No table location or storage root may reach a node's own files: its
// data directory (the raft log, snapshots) and anything above it, on any
// protocol; only the managed warehouse inside it is allowed.
func TestLocationsInsideTheDataDirectoryAreRefused(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	a := &api{t: t, base: nodes[0].URL}
	dir := "file://" + strings.TrimRight(nodes[0].Dir, "/")
	for _, inside := range []string{dir + "/raft", dir, dir + "/snapshots", dir + "/elsewhere/t"} {
		r := a.do(http.MethodPost, apiPrefix+"/tables", ucTableBody("default", "in_data", "DELTA", inside))
		ucErr(t, r, http.StatusBadRequest, "INVALID_ARGUMENT", "own files")
		r = a.do(http.MethodPost, deltaPrefix+"/catalogs/unity/schemas/default/tables", deltaExternal("in_data", inside+"/t"))
		deltaErr(t, r, http.StatusBadRequest, "InvalidParameterValueException", "own files")
		r = a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "in_data", "storage_root": inside})
		ucErr(t, r, http.StatusBadRequest, "INVALID_ARGUMENT", "own files")
		r = a.do(http.MethodPost, icebergPrefix+"/v1/unity/namespaces/default/tables", map[string]any{"name": "in_data", "location": inside + "/ice",
			"schema": map[string]any{"type": "struct", "fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}})
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), "own files") {
			t.Fatalf("Iceberg create at %s: %d %s", inside, r.status, r.raw)
		}
		r = a.do(http.MethodPost, lancePrefix+"/v1/table/unity$default$in_data/declare", map[string]any{"location": inside + "/lance"})
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), "own files") {
			t.Fatalf("Lance declare at %s: %d %s", inside, r.status, r.raw)
		}
	}
	above := "file://" + filepath.Dir(strings.TrimRight(nodes[0].Dir, "/"))
	r := a.do(http.MethodPost, apiPrefix+"/tables", ucTableBody("default", "above_data", "DELTA", above))
	ucErr(t, r, http.StatusBadRequest, "INVALID_ARGUMENT", "own files")
	warehouse := dir + "/warehouse/ext"
	a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucTableBody("default", "in_warehouse", "DELTA", warehouse))
}

// Nor may one lie in another node's data directory, whichever node leads
// and whichever the request reaches.
func TestLocationsInsidePeersDataDirectoriesAreRefused(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	for _, peer := range testcluster.Followers(nodes, leader) {
		inside := "file://" + strings.TrimRight(peer.Dir, "/") + "/raft/t"
		testcluster.WaitFor(t, 30*time.Second, "the leader to learn "+peer.ID()+"'s data directory", func() bool {
			r := (&api{t: t, base: leader.URL}).do(http.MethodPost, apiPrefix+"/tables", ucTableBody("default", "in_peer", "DELTA", inside))
			return r.status == http.StatusBadRequest && strings.Contains(string(r.raw), "own files")
		})
		for _, via := range nodes {
			r := (&api{t: t, base: via.URL}).do(http.MethodPost, apiPrefix+"/tables", ucTableBody("default", "in_peer", "DELTA", inside))
			ucErr(t, r, http.StatusBadRequest, "INVALID_ARGUMENT", "own files")
		}
	}
}
