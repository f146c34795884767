package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

const (
	invalidParam = "InvalidParameterValueException"
	reqConflict  = "UpdateRequirementConflictException"
)

func TestFastDeltaUpdateShape(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	m := a.newManaged()

	uuidReq := map[string]any{"type": "assert-table-uuid", "uuid": m.uuid}
	post := func(t *testing.T, body any) reply {
		t.Helper()
		return m.with(t).a.do(http.MethodPost, m.path(), body)
	}
	props := setProps("k", "v")

	// Every rejected request below must leave the table untouched.
	before := m.load()

	t.Run("requirements", func(t *testing.T) {
		// UC Delta case 37
		for _, reqs := range []any{nil, []any{}, []any{map[string]any{"type": "assert-etag", "etag": "x"}}} {
			deltaErr(t, post(t, map[string]any{"requirements": reqs, "updates": []any{props}}), 400, invalidParam, "assert-table-uuid requirement is required")
		}
		// UC Delta case 38
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq, uuidReq}, "updates": []any{props}}), 400, invalidParam,
			"At most one assert-table-uuid is allowed per request")
		etag := map[string]any{"type": "assert-etag", "etag": "x"}
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq, etag, etag}, "updates": []any{props}}), 400, invalidParam,
			"At most one assert-etag is allowed per request")
		// UC Delta case 39
		other := uuid.NewString()
		deltaErr(t, post(t, map[string]any{"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": other}}, "updates": []any{props}}),
			409, reqConflict, "assert-table-uuid failed", other, m.uuid)
	})

	t.Run("updates", func(t *testing.T) {
		// UC Delta case 42
		for _, ups := range []any{nil, []any{}} {
			deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": ups}), 400, invalidParam, "At least one update is required")
		}
		// UC Delta case 40
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{props, setProps("x", "y")}}), 400, invalidParam,
			"At most one set-properties is allowed per request")
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{commit(1), commit(2)}}), 400, invalidParam,
			"At most one add-commit is allowed per request")
		// UC Delta case 41
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{
			setProps("b", "1", "a", "2", "c", "3"), map[string]any{"action": "remove-properties", "removals": []string{"c", "a", "zz"}}}}),
			400, invalidParam, "set-properties and remove-properties overlap on keys: [a, c]")
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{
			map[string]any{"action": "set-domain-metadata", "updates": map[string]any{"delta.rowTracking": map[string]any{"rowIdHighWaterMark": 5}}},
			map[string]any{"action": "remove-domain-metadata", "domains": []string{"delta.rowTracking"}}}}),
			400, invalidParam, "set-domain-metadata and remove-domain-metadata overlap on domains: [delta.rowTracking]")
	})

	t.Run("unknown table", func(t *testing.T) { // UC Delta case 43
		a := a.with(t)
		body := map[string]any{"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": uuid.NewString()}}, "updates": []any{props}}
		deltaErr(t, a.do(http.MethodPost, tablePath(m.cat, m.sch, uniq("nope")), body), 404, "NoSuchTableException", "Table not found")
		deltaErr(t, a.do(http.MethodPost, tablePath(m.cat, uniq("nope_sch"), m.tbl), body), 404, "NoSuchSchemaException", "Schema not found")
		deltaErr(t, a.do(http.MethodPost, tablePath(uniq("nope_cat"), m.sch, m.tbl), body), 404, "NoSuchCatalogException", "Catalog not found")
	})

	t.Run("unknown discriminators", func(t *testing.T) {
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{map[string]any{"action": "drop-everything"}}}),
			400, invalidParam, "drop-everything")
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{map[string]any{"updates": map[string]any{"a": "b"}}}}),
			400, invalidParam)
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq, map[string]any{"type": "assert-owner"}}, "updates": []any{props}}),
			400, invalidParam, "assert-owner")
	})

	t.Run("malformed and mistyped JSON", func(t *testing.T) {
		deltaErr(t, post(t, `{"requirements": [`), 400, invalidParam)
		deltaErr(t, post(t, `not json`), 400, invalidParam)
		deltaErr(t, post(t, nil), 400, invalidParam, "Request body is required")
		c := commit(1)
		c["commit"].(map[string]any)["version"] = "one"
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{c}}), 400, invalidParam, "version")
		deltaErr(t, post(t, map[string]any{"requirements": "all", "updates": []any{props}}), 400, invalidParam, "requirements")
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{
			map[string]any{"action": "set-properties", "updates": map[string]any{"k": 5}}}}), 400, invalidParam)
	})

	t.Run("action fields", func(t *testing.T) {
		for _, tc := range []struct {
			up   map[string]any
			want string
		}{
			// UC Delta case 63
			{map[string]any{"action": "add-commit"}, "add-commit requires a commit block"},
			{map[string]any{"action": "set-latest-backfilled-version"}, "set-latest-backfilled-version requires latest-published-version"},
			// UC Delta case 45
			{map[string]any{"action": "set-protocol"}, "set-protocol requires a protocol"},
			{map[string]any{"action": "set-domain-metadata"}, "set-domain-metadata requires an updates block"},
			{map[string]any{"action": "set-domain-metadata", "updates": map[string]any{}}, "set-domain-metadata requires at least one domain entry"},
			{map[string]any{"action": "set-table-comment"}, "set-table-comment requires a comment"},
			{map[string]any{"action": "remove-domain-metadata", "domains": []string{"delta.nope"}}, "Unknown domain in remove-domain-metadata: delta.nope"},
			{map[string]any{"action": "set-columns"}, "set-columns requires a columns block"},
			{map[string]any{"action": "set-columns", "columns": map[string]any{"type": "struct", "fields": []any{}}}, "set-columns requires at least one column"},
			{map[string]any{"action": "set-partition-columns"}, "set-partition-columns requires a partition-columns list"},
			// UC Delta case 52: missing fields, and the action on a MANAGED table.
			{map[string]any{"action": "update-metadata-snapshot-version", "last-commit-timestamp-ms": 5}, "update-metadata-snapshot-version requires last-commit-version"},
			{map[string]any{"action": "update-metadata-snapshot-version", "last-commit-version": 5}, "update-metadata-snapshot-version requires last-commit-timestamp-ms"},
			{map[string]any{"action": "update-metadata-snapshot-version", "last-commit-version": 5, "last-commit-timestamp-ms": 5}, "only supported for EXTERNAL"},
			{map[string]any{"action": "set-partition-columns", "partition-columns": []string{"nope"}}, "partition-columns references unknown column: nope"},
		} {
			deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{tc.up}}), 400, invalidParam, tc.want)
		}
		// UC Delta case 69
		deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{commit(1),
			map[string]any{"action": "update-metadata-snapshot-version", "last-commit-version": 1, "last-commit-timestamp-ms": 5}}}),
			400, invalidParam, "only supported for EXTERNAL")
	})

	t.Run("commit fields", func(t *testing.T) { // UC Delta case 70
		for _, tc := range []struct {
			field string
			value any
			want  string
		}{
			{"version", 0, "version"},
			{"version", -1, "version"},
			{"version", nil, "version"},
			{"timestamp", 0, "timestamp"},
			{"file-size", 0, "file_size"},
			{"file-modification-timestamp", 0, "file_modification_timestamp"},
			{"file-name", "", "file_name"},
			{"file-name", nil, "file_name"},
			{"file-name", "../x.json", "without path separators"},
			{"file-name", `a\b.json`, "without path separators"},
			{"file-name", "..", "without path separators"},
		} {
			c := commit(1)
			cm := c["commit"].(map[string]any)
			if tc.value == nil {
				delete(cm, tc.field)
			} else {
				cm[tc.field] = tc.value
			}
			deltaErr(t, post(t, map[string]any{"requirements": []any{uuidReq}, "updates": []any{c}}), 400, invalidParam, tc.want)
		}
	})

	t.Run("body over the limit", func(t *testing.T) {
		a := a.with(t)
		big := map[string]any{"requirements": []any{uuidReq}, "updates": []any{setProps("big", strings.Repeat("x", 9<<20))}}
		raw, err := json.Marshal(big)
		if err != nil {
			t.Fatal(err)
		}
		deltaErr(t, a.do(http.MethodPost, m.path(), raw), 413, invalidParam)

		// Without a Content-Length the limit applies while reading.
		req, err := http.NewRequest(http.MethodPost, a.base+m.path(), struct{ *bytes.Reader }{bytes.NewReader(raw)})
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("chunked oversized request: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked oversized request: status %d, want 413", resp.StatusCode)
		}
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", raw), 413, "INVALID_ARGUMENT")
	})

	t.Run("nothing changed", func(t *testing.T) {
		after := m.with(t).load()
		if dig(after, "metadata", "etag") != dig(before, "metadata", "etag") {
			t.Fatal("a rejected request changed the etag")
		}
		if _, ok := objOf(t, dig(after, "metadata", "properties"))["big"]; ok {
			t.Fatal("the oversized request was applied")
		}
		if len(arr(t, after["commits"])) != 0 || latest(t, after) != 0 {
			t.Fatalf("a rejected request changed the commit log: %v", after["commits"])
		}
		if !jsonEqual(t, before, after) {
			t.Fatalf("table changed:\nbefore %v\nafter  %v", before, after)
		}
	})
}

func jsonEqual(t testing.TB, x, y any) bool {
	t.Helper()
	bx, err1 := json.Marshal(x)
	by, err2 := json.Marshal(y)
	if err1 != nil || err2 != nil {
		t.Fatalf("marshal: %v %v", err1, err2)
	}
	return bytes.Equal(bx, by)
}

func TestFastDeltaUpdateMetadata(t *testing.T) {
	t.Parallel()
	a := startAPI(t)

	t.Run("stale etag", func(t *testing.T) { // UC Delta case 44
		m := a.with(t).newManaged()
		e0 := m.etag()
		r := m.mustUpdate(e0, setProps("p", "1"))
		e1 := str(t, dig(r, "metadata", "etag"))
		if e1 == e0 {
			t.Fatal("set-properties did not change the etag")
		}
		deltaErr(t, m.update(e0, setProps("p", "2"), map[string]any{"action": "set-table-comment", "comment": "c"}), 409, reqConflict,
			"assert-etag failed", e0, e1)
		after := m.load()
		if dig(after, "metadata", "etag") != e1 || dig(after, "metadata", "properties", "p") != "1" {
			t.Fatalf("stale-etag request applied: %v", after["metadata"])
		}
		m.mustUpdate(e1, setProps("p", "3"))
		if got := dig(m.load(), "metadata", "properties", "p"); got != "3" {
			t.Fatalf("p = %v after an update with the current etag", got)
		}
	})

	t.Run("properties, protocol, domains, comment", func(t *testing.T) { // UC Delta case 46 (wire view)
		m := a.with(t).newManaged()
		before := m.load()
		e0 := str(t, dig(before, "metadata", "etag"))
		rp := map[string]any{
			"min-reader-version": 3, "min-writer-version": 7,
			"reader-features": []string{"catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors"},
			"writer-features": []string{"catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors", "inCommitTimestamp",
				"domainMetadata", "rowTracking", "clustering"},
		}
		res := m.mustUpdate(e0,
			setProps("added", "v4", "delta.checkpointPolicy", "v2"),
			map[string]any{"action": "remove-properties", "removals": []string{"delta.randomKey", "missing"}},
			map[string]any{"action": "set-protocol", "protocol": rp},
			map[string]any{"action": "set-domain-metadata", "updates": map[string]any{"delta.clustering": map[string]any{"clusteringColumns": [][]string{{"id"}}}}},
			map[string]any{"action": "set-table-comment", "comment": "commented"},
		)
		md := objOf(t, res["metadata"])
		props := objOf(t, md["properties"])
		if props["added"] != "v4" || props["clusteringColumns"] != `[["id"]]` || props["delta.rowTracking.rowIdHighWaterMark"] != "99" {
			t.Fatalf("properties = %v", props)
		}
		var feats []string
		for k, v := range props {
			if f, ok := strings.CutPrefix(k, "delta.feature."); ok {
				if v != "supported" {
					t.Fatalf("%s = %v", k, v)
				}
				feats = append(feats, f)
			}
		}
		want := sorted(strs(t, toAny(rp["writer-features"])))
		if !slices.Equal(sorted(feats), want) {
			t.Fatalf("features = %v, want %v", sorted(feats), want)
		}
		if md["etag"] == e0 {
			t.Fatal("metadata update kept the etag")
		}
		if num(t, md["updated-time"]) < num(t, dig(before, "metadata", "updated-time")) {
			t.Fatal("updated-time went backwards")
		}
		info := a.with(t).ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/"+m.cat+"."+m.sch+"."+m.tbl, nil).obj(t)
		if info["comment"] != "commented" {
			t.Fatalf("UC comment = %v", info["comment"])
		}

		// UC Delta case 47: removing the row-tracking domain removes its property, keeps clustering and changes the etag.
		res2 := m.mustUpdate("", map[string]any{"action": "remove-domain-metadata", "domains": []string{"delta.rowTracking"}})
		p2 := objOf(t, dig(res2, "metadata", "properties"))
		if _, ok := p2["delta.rowTracking.rowIdHighWaterMark"]; ok {
			t.Fatal("remove-domain-metadata kept the high-water mark")
		}
		if p2["clusteringColumns"] != `[["id"]]` {
			t.Fatal("remove-domain-metadata of rowTracking dropped clustering")
		}
		if dig(res2, "metadata", "etag") == md["etag"] {
			t.Fatal("remove-domain-metadata kept the etag")
		}
	})

	t.Run("domain metadata and the etag", func(t *testing.T) { // §4.1: a rowTracking-only domain update keeps the etag
		m := a.with(t).newManaged()
		e0 := m.etag()
		res := m.mustUpdate("", map[string]any{"action": "set-domain-metadata",
			"updates": map[string]any{"delta.rowTracking": map[string]any{"rowIdHighWaterMark": 500}}})
		if dig(res, "metadata", "properties", "delta.rowTracking.rowIdHighWaterMark") != "500" || dig(res, "metadata", "etag") != e0 {
			t.Fatalf("HWM-only update: %v", res["metadata"])
		}
		deltaErr(t, m.update("", map[string]any{"action": "set-domain-metadata",
			"updates": map[string]any{"delta.clustering": map[string]any{"clusteringColumns": [][]string{{"id"}}}}}), 400, invalidParam, "'clustering' writer feature")
		if m.etag() != e0 {
			t.Fatal("rejected clustering update changed the etag")
		}
		res = m.mustUpdate("", map[string]any{"action": "remove-domain-metadata", "domains": []string{"delta.rowTracking"}})
		if _, ok := objOf(t, dig(res, "metadata", "properties"))["delta.rowTracking.rowIdHighWaterMark"]; ok || dig(res, "metadata", "etag") == e0 {
			t.Fatalf("remove-domain-metadata: %v", res["metadata"])
		}
	})

	t.Run("protocol contract on update", func(t *testing.T) {
		m := a.with(t).newManaged()
		e0 := m.etag()
		noCM := map[string]any{"min-reader-version": 3, "min-writer-version": 7,
			"reader-features": []string{"v2Checkpoint", "vacuumProtocolCheck", "deletionVectors"},
			"writer-features": []string{"v2Checkpoint", "vacuumProtocolCheck", "deletionVectors", "inCommitTimestamp", "rowTracking", "domainMetadata"}}
		// UC Delta case 50
		deltaErr(t, m.update("", map[string]any{"action": "set-protocol", "protocol": noCM}), 400, invalidParam, "catalogManaged")
		noRT := map[string]any{"min-reader-version": 3, "min-writer-version": 7,
			"reader-features": []string{"catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors"},
			"writer-features": []string{"catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors", "inCommitTimestamp"}}
		deltaErr(t, m.update("", map[string]any{"action": "set-protocol", "protocol": noRT}), 400, invalidParam, "rowTracking")
		if m.etag() != e0 {
			t.Fatal("rejected set-protocol changed the etag")
		}
		// UC Delta case 49: dropping the feature together with its domain is fine; setting the domain afterwards is not.
		m.mustUpdate("", map[string]any{"action": "set-protocol", "protocol": noRT},
			map[string]any{"action": "remove-domain-metadata", "domains": []string{"delta.rowTracking"}})
		deltaErr(t, m.update("", map[string]any{"action": "set-domain-metadata",
			"updates": map[string]any{"delta.rowTracking": map[string]any{"rowIdHighWaterMark": 5}}}), 400, invalidParam, "rowTracking")
	})

	t.Run("columns and partitions", func(t *testing.T) { // UC Delta case 53
		m := a.with(t).newManaged()
		cols := map[string]any{"type": "struct", "fields": []any{
			map[string]any{"name": "new_id", "type": "long", "nullable": false, "metadata": map[string]any{}},
			map[string]any{"name": "flag", "type": "boolean", "nullable": true, "metadata": map[string]any{}},
		}}
		res := m.mustUpdate("", map[string]any{"action": "set-columns", "columns": cols},
			map[string]any{"action": "set-partition-columns", "partition-columns": []string{"FLAG"}})
		if got := columnNames(t, res); !slices.Equal(got, []string{"new_id", "flag"}) {
			t.Fatalf("columns = %v", got)
		}
		if got := strs(t, dig(res, "metadata", "partition-columns")); !slices.Equal(got, []string{"flag"}) {
			t.Fatalf("partition-columns = %v", got)
		}
		// set-columns alone must keep the partition column.
		deltaErr(t, m.update("", map[string]any{"action": "set-columns", "columns": simpleColumns()}), 400, invalidParam,
			"partition-columns references unknown column: flag")
		res = m.mustUpdate("", map[string]any{"action": "set-partition-columns", "partition-columns": []string{}})
		if got := dig(res, "metadata", "partition-columns"); len(arr(t, got)) != 0 {
			t.Fatalf("partition-columns = %v, want []", got)
		}
		deltaErr(t, m.update("", map[string]any{"action": "set-columns", "columns": map[string]any{"type": "struct", "fields": []any{
			map[string]any{"name": "x", "type": "long", "nullable": true}}}}), 400, invalidParam, "columns.fields[0].metadata is required.")
	})

	t.Run("external table updates", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		ext := a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), externalBody("ext", "s3://bucket/u/"+uniq("e"))).obj(t)
		m := &managedTable{a: a, cat: cat, sch: sch, tbl: "ext", uuid: str(t, dig(ext, "metadata", "table-uuid"))}
		// UC Delta case 51
		res := m.mustUpdate("", map[string]any{"action": "set-protocol", "protocol": map[string]any{
			"min-reader-version": 3, "min-writer-version": 7, "reader-features": []string{"v2Checkpoint"}, "writer-features": []string{"v2Checkpoint"}}})
		var feats []string
		for k := range objOf(t, dig(res, "metadata", "properties")) {
			if strings.HasPrefix(k, "delta.feature.") {
				feats = append(feats, k)
			}
		}
		if !slices.Equal(feats, []string{"delta.feature.v2Checkpoint"}) {
			t.Fatalf("features = %v", feats)
		}
		// UC Delta case 52
		res = m.mustUpdate("", map[string]any{"action": "update-metadata-snapshot-version", "last-commit-version": 42, "last-commit-timestamp-ms": 1700000000001})
		if num(t, dig(res, "metadata", "last-commit-version")) != 42 || num(t, dig(res, "metadata", "last-commit-timestamp-ms")) != 1700000000001 {
			t.Fatalf("snapshot version = %v", res["metadata"])
		}
		deltaErr(t, m.update("", map[string]any{"action": "update-metadata-snapshot-version", "last-commit-timestamp-ms": 5}), 400, invalidParam,
			"update-metadata-snapshot-version requires last-commit-version")
		deltaErr(t, m.update("", map[string]any{"action": "update-metadata-snapshot-version", "last-commit-version": 5}), 400, invalidParam,
			"update-metadata-snapshot-version requires last-commit-timestamp-ms")
		// UC Delta case 64
		deltaErr(t, m.update("", commit(1)), 400, invalidParam, "MANAGED")
		deltaErr(t, m.update("", backfill(1)), 400, invalidParam, "MANAGED")
		if load := m.load(); num(t, dig(load, "metadata", "last-commit-version")) != 42 || dig(load, "metadata", "etag") != dig(res, "metadata", "etag") {
			t.Fatalf("rejected updates changed the table: %v", load["metadata"])
		}
	})
}

func toAny(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func TestFastDeltaUpdateCommits(t *testing.T) {
	t.Parallel()
	a := startAPI(t)

	t.Run("first commit", func(t *testing.T) { // UC Delta case 54
		m := a.with(t).newManaged()
		before := m.load()
		res := m.mustUpdate("", commit(1))
		if got := commitVersions(t, res); !slices.Equal(got, []int64{1}) || latest(t, res) != 1 {
			t.Fatalf("commits %v latest %v", got, res["latest-table-version"])
		}
		c := objOf(t, dig(res, "commits", 0))
		want := commit(1)["commit"].(map[string]any)
		if got := keys(c); !slices.Equal(got, []string{"file-modification-timestamp", "file-name", "file-size", "timestamp", "version"}) {
			t.Fatalf("commit keys = %v", got)
		}
		if c["file-name"] != want["file-name"] || num(t, c["timestamp"]) != 1700000000001 || num(t, c["file-size"]) != 1001 ||
			num(t, c["file-modification-timestamp"]) != 1700000000501 {
			t.Fatalf("commit echoed as %v", c)
		}
		for _, k := range []string{"etag", "updated-time", "last-commit-version"} {
			if dig(res, "metadata", k) != dig(before, "metadata", k) {
				t.Fatalf("data-only commit changed %s", k)
			}
		}
	})

	t.Run("first commit must be version 1", func(t *testing.T) {
		m := a.with(t).newManaged()
		deltaErr(t, m.update("", commit(2)), 400, invalidParam, "next version")
	})

	t.Run("replays and conflicts", func(t *testing.T) {
		m := a.with(t).newManaged()
		m.mustUpdate("", commit(1))
		before := m.load()
		// UC Delta case 55
		res := m.mustUpdate("", commit(1))
		if got := commitVersions(t, res); !slices.Equal(got, []int64{1}) || dig(res, "metadata", "etag") != dig(before, "metadata", "etag") {
			t.Fatalf("replay changed state: %v", res)
		}
		if !jsonEqual(t, m.load(), before) {
			t.Fatal("replay changed the table")
		}
		// UC Delta case 56
		deltaErr(t, m.update("", commitAs(1, "other")), 409, "CommitVersionConflictException", "already accepted", commitFile(1, "other"))
		// UC Delta case 57
		deltaErr(t, m.update("", commit(3)), 400, invalidParam, "next version")
		if !jsonEqual(t, m.load(), before) {
			t.Fatal("a rejected commit changed the table")
		}
		// UC Delta case 58
		m.mustUpdate("", commit(2))
		m.mustUpdate("", commit(3))
		for _, v := range []int64{1, 2} {
			res := m.mustUpdate("", commit(v))
			if latest(t, res) != 3 || !slices.Equal(commitVersions(t, res), []int64{3, 2, 1}) {
				t.Fatalf("replay of v%d: commits %v latest %v", v, commitVersions(t, res), res["latest-table-version"])
			}
		}
		deltaErr(t, m.update("", commitAs(2, "other")), 409, "CommitVersionConflictException", "already accepted")
	})

	t.Run("replay ignores etag and its other actions", func(t *testing.T) { // UC Delta case 59
		m := a.with(t).newManaged()
		e0 := m.etag()
		res := m.mustUpdate(e0, commit(1), setProps("p", "1"))
		e1 := str(t, dig(res, "metadata", "etag"))
		if e1 == e0 {
			t.Fatal("add-commit + set-properties kept the etag")
		}
		if num(t, dig(res, "metadata", "last-commit-version")) != 1 || num(t, dig(res, "metadata", "last-commit-timestamp-ms")) != 1700000000001 {
			t.Fatalf("metadata commit not stamped: %v", res["metadata"])
		}
		res = m.mustUpdate(e0, commit(1), setProps("p", "1"))
		if dig(res, "metadata", "etag") != e1 || dig(res, "metadata", "properties", "p") != "1" {
			t.Fatalf("replay answer %v", res["metadata"])
		}
		// A replay carrying different metadata applies none of it.
		m.mustUpdate(e0, commit(1), setProps("p", "changed"))
		if got := dig(m.load(), "metadata", "properties", "p"); got != "1" {
			t.Fatalf("replay applied its set-properties: p = %v", got)
		}
		deltaErr(t, m.update(e0, commit(2)), 409, reqConflict, "assert-etag failed")
		if latest(t, m.load()) != 1 {
			t.Fatal("stale-etag commit landed")
		}
		res = m.mustUpdate(e1, commit(2))
		if latest(t, res) != 2 || dig(res, "metadata", "etag") != e1 {
			t.Fatalf("v2 with current etag: %v", res)
		}
	})

	t.Run("replay does not backfill", func(t *testing.T) { // UC Delta case 60
		m := a.with(t).newManaged()
		m.mustUpdate("", commit(1))
		m.mustUpdate("", commit(2))
		res := m.mustUpdate("stale-etag", commit(2), backfill(1))
		if got := commitVersions(t, res); !slices.Equal(got, []int64{2, 1}) {
			t.Fatalf("replay answer commits %v", got)
		}
		if got := commitVersions(t, m.load()); !slices.Equal(got, []int64{2, 1}) {
			t.Fatalf("replay backfilled: commits %v", got)
		}
	})

	t.Run("commit with backfill", func(t *testing.T) { // UC Delta case 61
		m := a.with(t).newManaged()
		m.mustUpdate("", commit(1))
		before := m.load()
		res := m.mustUpdate("", commit(2), backfill(1))
		if got := commitVersions(t, res); !slices.Equal(got, []int64{2}) || latest(t, res) != 2 {
			t.Fatalf("commits %v latest %v", got, res["latest-table-version"])
		}
		if dig(res, "metadata", "updated-time") != dig(before, "metadata", "updated-time") || dig(res, "metadata", "etag") != dig(before, "metadata", "etag") {
			t.Fatal("commit + backfill changed updated-time or etag")
		}
		deltaErr(t, m.update("", commit(3), backfill(3)), 400, invalidParam, "Latest backfilled version 3 cannot be greater than the last commit version = 2")
	})

	t.Run("backfill and load order", func(t *testing.T) { // UC Delta case 32
		m := a.with(t).newManaged()
		m.mustUpdate("", commit(1))
		m.mustUpdate("", commit(2))
		load := m.load()
		if got := commitVersions(t, load); !slices.Equal(got, []int64{2, 1}) || latest(t, load) != 2 {
			t.Fatalf("commits %v latest %v", got, load["latest-table-version"])
		}
		e, ut := dig(load, "metadata", "etag"), dig(load, "metadata", "updated-time")
		m.mustUpdate("", backfill(1))
		if got := commitVersions(t, m.load()); !slices.Equal(got, []int64{2}) {
			t.Fatalf("after backfill 1: commits %v", got)
		}
		m.mustUpdate("", backfill(2))
		load = m.load()
		if got := commitVersions(t, load); len(got) != 0 || latest(t, load) != 2 {
			t.Fatalf("after backfill 2: commits %v latest %v", got, load["latest-table-version"])
		}
		if dig(load, "metadata", "etag") != e || dig(load, "metadata", "updated-time") != ut {
			t.Fatal("backfill changed etag or updated-time")
		}
		// The fully backfilled newest version is still a replay target and the next version follows it.
		res := m.mustUpdate("", commit(2))
		if latest(t, res) != 2 {
			t.Fatalf("replay of backfilled v2: latest %v", res["latest-table-version"])
		}
		deltaErr(t, m.update("", commitAs(2, "other")), 409, "CommitVersionConflictException")
		res = m.mustUpdate("", commit(3))
		if got := commitVersions(t, res); !slices.Equal(got, []int64{3}) || latest(t, res) != 3 {
			t.Fatalf("v3 after full backfill: commits %v latest %v", got, res["latest-table-version"])
		}
	})

	t.Run("backfill only", func(t *testing.T) { // UC Delta case 66
		m := a.with(t).newManaged()
		before := m.mustUpdate("", commit(1))
		res := m.mustUpdate("", backfill(1))
		if latest(t, res) != 1 {
			t.Fatalf("backfill answer: latest %v", res["latest-table-version"])
		}
		for _, k := range []string{"etag", "updated-time"} {
			if dig(res, "metadata", k) != dig(before, "metadata", k) {
				t.Fatalf("backfill changed %s", k)
			}
		}
		load := m.load()
		if got := commitVersions(t, load); len(got) != 0 || latest(t, load) != 1 {
			t.Fatalf("load after backfill 1: commits %v latest %v", got, load["latest-table-version"])
		}
		if dig(load, "metadata", "etag") != dig(before, "metadata", "etag") || dig(load, "metadata", "updated-time") != dig(before, "metadata", "updated-time") {
			t.Fatal("backfill changed etag or updated-time")
		}
	})

	t.Run("backfill errors", func(t *testing.T) { // UC Delta case 67
		m := a.with(t).newManaged()
		deltaErr(t, m.update("", backfill(1)), 400, invalidParam, "Backfill request requires a prior commit")
		m.mustUpdate("", commit(1))
		deltaErr(t, m.update("", backfill(5)), 400, invalidParam, "Should not backfill version 5")
	})

	t.Run("unbackfilled limit", func(t *testing.T) { // UC Delta case 71
		m := a.with(t).newManaged()
		for v := int64(1); v <= 10; v++ {
			m.mustUpdate("", commit(v))
		}
		deltaErr(t, m.update("", commit(11)), 429, "ResourceExhaustedException", "Max number of commits per table reached", m.uuid)
		if latest(t, m.load()) != 10 {
			t.Fatal("v11 landed past the limit")
		}
		res := m.mustUpdate("", commit(11), backfill(6))
		if got := commitVersions(t, res); !slices.Equal(got, []int64{11, 10, 9, 8, 7}) || latest(t, res) != 11 {
			t.Fatalf("v11 + backfill 6: commits %v latest %v", got, res["latest-table-version"])
		}
		// UC Delta case 73: a backfill below the oldest tracked version is a no-op.
		before := m.load()
		res = m.mustUpdate("", backfill(3))
		if got := commitVersions(t, res); !slices.Equal(got, []int64{11, 10, 9, 8, 7}) {
			t.Fatalf("backfill 3: commits %v", got)
		}
		if !jsonEqual(t, m.load(), before) {
			t.Fatal("backfill below the oldest tracked version changed the table")
		}

		m2 := a.with(t).newManaged()
		for v := int64(1); v <= 5; v++ {
			m2.mustUpdate("", commit(v))
		}
		deltaErr(t, m2.update("", commit(6), backfill(6)), 400, invalidParam, "Latest backfilled version 6 cannot be greater than the last commit version = 5")
	})

	t.Run("uniform on commit", func(t *testing.T) { // UC Delta case 68
		m := a.with(t).newManaged()
		loc := str(t, dig(m.load(), "metadata", "location"))
		uni := func(ml string, v int64) map[string]any {
			c := commit(v)
			c["uniform"] = map[string]any{"iceberg": map[string]any{"metadata-location": ml, "converted-delta-version": v, "converted-delta-timestamp": 1700000000009}}
			return c
		}
		deltaErr(t, m.update("", uni(loc+"/_uniform/v1.json", 1)), 400, invalidParam, "Uniform metadata must not be set unless")
		deltaErr(t, m.update("", commit(1), setProps("delta.universalFormat.enabledFormats", "iceberg")), 400, invalidParam, "Uniform metadata must be set when")
		// UC Delta case 68
		deltaErr(t, m.update("", uni("s3://elsewhere/x.json", 1), setProps("delta.universalFormat.enabledFormats", "iceberg")), 400, invalidParam, "must be a subpath")
		// UC Delta case 65
		bad := uni(loc+"/_uniform/v1.json", 1)
		bad["uniform"].(map[string]any)["iceberg"].(map[string]any)["converted-delta-version"] = 2
		deltaErr(t, m.update("", bad, setProps("delta.universalFormat.enabledFormats", "iceberg")), 400, invalidParam, "converted-delta-version")
		res := m.mustUpdate("", uni(loc+"/_uniform/v1.json", 1), setProps("delta.universalFormat.enabledFormats", "iceberg"))
		if got := dig(res, "uniform", "iceberg", "metadata-location"); got != loc+"/_uniform/v1.json" {
			t.Fatalf("uniform = %v", res["uniform"])
		}
		if num(t, dig(res, "uniform", "iceberg", "converted-delta-version")) != 1 {
			t.Fatalf("uniform = %v", res["uniform"])
		}
	})

	t.Run("auto-stamping", func(t *testing.T) { // UC Delta case 62
		m := a.with(t).newManaged()
		res := m.mustUpdate("", commit(1), setProps("p", "1"))
		if num(t, dig(res, "metadata", "last-commit-version")) != 1 || num(t, dig(res, "metadata", "last-commit-timestamp-ms")) != 1700000000001 {
			t.Fatalf("v1 + set-properties not stamped: %v", res["metadata"])
		}
		res = m.mustUpdate("", commit(2))
		if num(t, dig(res, "metadata", "last-commit-version")) != 1 {
			t.Fatalf("data-only v2 stamped: %v", dig(res, "metadata", "last-commit-version"))
		}
		e, ut := dig(res, "metadata", "etag"), dig(res, "metadata", "updated-time")
		res = m.mustUpdate("", commit(3), map[string]any{"action": "set-domain-metadata",
			"updates": map[string]any{"delta.rowTracking": map[string]any{"rowIdHighWaterMark": 150}}})
		if dig(res, "metadata", "properties", "delta.rowTracking.rowIdHighWaterMark") != "150" || num(t, dig(res, "metadata", "last-commit-version")) != 1 {
			t.Fatalf("v3 + HWM: %v", res["metadata"])
		}
		if dig(res, "metadata", "etag") != e || dig(res, "metadata", "updated-time") != ut {
			t.Fatal("HWM-only domain update changed etag or updated-time")
		}
		res = m.mustUpdate("", commit(4), map[string]any{"action": "set-columns", "columns": simpleColumns()})
		if num(t, dig(res, "metadata", "last-commit-version")) != 4 || num(t, dig(res, "metadata", "last-commit-timestamp-ms")) != 1700000000004 {
			t.Fatalf("v4 + set-columns not stamped: %v", res["metadata"])
		}
		// A metadata change without a commit does not stamp.
		res = m.mustUpdate("", setProps("q", "1"))
		if num(t, dig(res, "metadata", "last-commit-version")) != 4 {
			t.Fatalf("set-properties alone stamped: %v", dig(res, "metadata", "last-commit-version"))
		}
	})

	t.Run("replay of a purged version", func(t *testing.T) { // UC Delta case 72
		m := a.with(t).newManaged()
		for v := int64(1); v <= 3; v++ {
			m.mustUpdate("", commit(v))
		}
		m.mustUpdate("", backfill(2))
		if got := commitVersions(t, m.load()); !slices.Equal(got, []int64{3}) {
			t.Fatalf("commits after backfill 2: %v", got)
		}
		root := strings.TrimPrefix(str(t, dig(m.load(), "metadata", "location")), "file://")
		logDir := filepath.Join(root, "_delta_log")
		staged := filepath.Join(logDir, "_staged_commits", commitFile(2, "0b2c9b7e-0000-4000-8000-000000000001"))
		published := filepath.Join(logDir, fmt.Sprintf("%020d.json", 2))

		// Neither file readable: the outcome is unknown.
		deltaErr(t, m.update("", commit(2)), 500, "CommitStateUnknownException", "retry")

		if err := os.MkdirAll(filepath.Dir(staged), 0o755); err != nil {
			t.Fatal(err)
		}
		content := []byte(`{"commitInfo":{"inCommitTimestamp":1700000000002}}` + "\n")
		for _, f := range []string{staged, published} {
			if err := os.WriteFile(f, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res := m.mustUpdate("", commit(2))
		if latest(t, res) != 3 || !slices.Equal(commitVersions(t, res), []int64{3}) {
			t.Fatalf("identical purged replay: commits %v latest %v", commitVersions(t, res), res["latest-table-version"])
		}

		if err := os.WriteFile(staged, []byte(`{"other":true}`), 0o644); err != nil {
			t.Fatal(err)
		}
		deltaErr(t, m.update("", commit(2)), 409, "CommitVersionConflictException", "already accepted")

		// The published file missing while the staged one exists: unknown.
		if err := os.Remove(published); err != nil {
			t.Fatal(err)
		}
		deltaErr(t, m.update("", commit(2)), 500, "CommitStateUnknownException", "retry")
		// The published file is a directory: unknown.
		if err := os.Mkdir(published, 0o755); err != nil {
			t.Fatal(err)
		}
		deltaErr(t, m.update("", commit(2)), 500, "CommitStateUnknownException", "retry")
		if got := commitVersions(t, m.load()); !slices.Equal(got, []int64{3}) {
			t.Fatalf("commits changed: %v", got)
		}
	})

	t.Run("concurrent writers of one version", func(t *testing.T) {
		m := a.with(t).newManaged()
		const n = 8
		statuses := make(chan int, n)
		for i := range n {
			go func() {
				reqs := []any{map[string]any{"type": "assert-table-uuid", "uuid": m.uuid}}
				body, _ := json.Marshal(map[string]any{"requirements": reqs, "updates": []any{commitAs(1, uuid.NewString()[:8]+string(rune('a'+i)))}})
				resp, err := httpClient.Post(a.base+m.path(), "application/json", bytes.NewReader(body))
				if err != nil {
					statuses <- -1
					return
				}
				resp.Body.Close()
				statuses <- resp.StatusCode
			}()
		}
		won := 0
		for range n {
			switch s := <-statuses; s {
			case http.StatusOK:
				won++
			case http.StatusConflict:
			default:
				t.Fatalf("concurrent commit answered %d", s)
			}
		}
		if won != 1 {
			t.Fatalf("%d writers won version 1, want exactly 1", won)
		}
		if got := commitVersions(t, m.load()); !slices.Equal(got, []int64{1}) {
			t.Fatalf("commits %v", got)
		}
	})
}
