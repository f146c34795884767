package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	a := startRaftAPI(t)

	t.Run("healthz and readyz", func(t *testing.T) {
		a := a.with(t)
		for _, p := range []string{"/healthz", "/readyz"} {
			r := a.ok(http.StatusOK, http.MethodGet, p, nil)
			if got := dig(r.body, "node_id"); got != "node1" {
				t.Fatalf("%s node_id = %v, want node1", p, got)
			}
		}
	})

	t.Run("the root points at the APIs and the status page", func(t *testing.T) {
		a := a.with(t)
		r := a.ok(http.StatusOK, http.MethodGet, "/", nil)
		if dig(r.body, "endpoints", "status_page") != "/ui/" || dig(r.body, "endpoints", "iceberg_rest") == nil {
			t.Fatalf("GET / = %s", r.raw)
		}
		req, _ := http.NewRequest(http.MethodGet, a.base+"/", nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
			t.Fatalf("GET / from a browser: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})

	t.Run("leader check", func(t *testing.T) {
		a := a.with(t)
		for p, want := range map[string]string{"/readyz?leader": "leader", "/readyz?leader=true": "leader", "/readyz?leader=false": "ready"} {
			r := a.ok(http.StatusOK, http.MethodGet, p, nil)
			if got := dig(r.body, "status"); got != want {
				t.Fatalf("%s status = %v, want %s", p, got, want)
			}
		}
		a.ok(http.StatusBadRequest, http.MethodGet, "/readyz?leader=maybe", nil)
	})

	t.Run("cluster status", func(t *testing.T) {
		a := a.with(t)
		st := a.ok(http.StatusOK, http.MethodGet, "/v1/cluster", nil).obj(t)
		if str(t, st["node_id"]) != "node1" {
			t.Fatalf("node_id = %v", st["node_id"])
		}
		if s := str(t, st["state"]); !strings.EqualFold(s, "leader") {
			t.Fatalf("state = %q, want Leader", s)
		}
		if str(t, st["leader_id"]) != "node1" {
			t.Fatalf("leader_id = %v, want node1", st["leader_id"])
		}
		for _, k := range []string{"term", "commit_index", "applied_index"} {
			if num(t, st[k]) <= 0 {
				t.Fatalf("%s = %v, want > 0", k, st[k])
			}
		}
		members := arr(t, st["members"])
		if len(members) != 1 {
			t.Fatalf("members = %v, want one", members)
		}
		m := objOf(t, members[0])
		for _, k := range []string{"id", "raft_addr", "http_addr", "status", "voter"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("member lacks %q: %v", k, m)
			}
		}
		if str(t, m["id"]) != "node1" || m["voter"] != true || str(t, m["raft_addr"]) == "" {
			t.Fatalf("member = %v", m)
		}
		if !strings.HasSuffix(a.base, str(t, m["http_addr"])) {
			t.Fatalf("member http_addr %v does not match %s", m["http_addr"], a.base)
		}
		if str(t, m["status"]) != "alive" {
			t.Fatalf("member status = %v, want alive", m["status"])
		}
	})
}

func TestFastUCREST(t *testing.T) {
	t.Parallel()
	a := startAPI(t)

	t.Run("metastore summary and seeded namespace", func(t *testing.T) {
		a := a.with(t)
		ms := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/metastore_summary", nil)
		requireIndex(t, ms)
		if str(t, dig(ms.body, "metastore_id")) == "" {
			t.Fatalf("metastore_id empty: %s", ms.raw)
		}
		cat := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/unity", nil).obj(t)
		if cat["name"] != "unity" || str(t, cat["id"]) == "" {
			t.Fatalf("catalog unity = %v", cat)
		}
		sch := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas/unity.default", nil).obj(t)
		if sch["name"] != "default" || sch["catalog_name"] != "unity" || sch["full_name"] != "unity.default" || str(t, sch["schema_id"]) == "" {
			t.Fatalf("schema unity.default = %v", sch)
		}
	})

	t.Run("stale read opt-in", func(t *testing.T) {
		a := a.with(t)
		r := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/unity", nil, headerConsistency, "stale")
		requireIndex(t, r)
		if dig(r.body, "name") != "unity" {
			t.Fatalf("stale read body %s", r.raw)
		}
		r = a.ok(http.StatusOK, http.MethodGet, deltaPrefix+"/config?catalog=unity&protocol-versions=1.0", nil, headerConsistency, "stale")
		requireIndex(t, r)
	})

	t.Run("catalog lifecycle", func(t *testing.T) {
		a := a.with(t)
		name := uniq("cat")
		r := a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{
			"name": name, "comment": "first", "properties": map[string]any{"k": "v"}})
		idx1 := requireIndex(t, r)
		c := r.obj(t)
		if c["name"] != name || c["comment"] != "first" || dig(c, "properties", "k") != "v" || str(t, c["id"]) == "" {
			t.Fatalf("created catalog = %v", c)
		}
		if num(t, c["created_at"]) <= 0 {
			t.Fatalf("created_at = %v", c["created_at"])
		}

		got := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/"+name, nil).obj(t)
		if got["id"] != c["id"] || got["comment"] != "first" {
			t.Fatalf("get catalog = %v", got)
		}

		ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": name}), 400, "CATALOG_ALREADY_EXISTS", name)

		upd := a.ok(http.StatusOK, http.MethodPatch, apiPrefix+"/catalogs/"+name, map[string]any{"comment": "second"})
		if idx2 := requireIndex(t, upd); idx2 <= idx1 {
			t.Fatalf("index did not advance: %d then %d", idx1, idx2)
		}
		if dig(upd.body, "comment") != "second" || dig(upd.body, "properties", "k") != "v" {
			t.Fatalf("updated catalog = %s", upd.raw)
		}

		// A schema under the catalog blocks a plain delete.
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "inner", "catalog_name": name})

		newName := uniq("cat_renamed")
		ren := a.ok(http.StatusOK, http.MethodPatch, apiPrefix+"/catalogs/"+name, map[string]any{"new_name": newName})
		if dig(ren.body, "name") != newName || dig(ren.body, "id") != c["id"] {
			t.Fatalf("renamed catalog = %s", ren.raw)
		}
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs/"+name, nil), 404, "NOT_FOUND", name)
		a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas/"+newName+".inner", nil)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/"+name+".inner", nil), 404, "NOT_FOUND")

		ucErr(t, a.do(http.MethodDelete, apiPrefix+"/catalogs/"+newName, nil), 400, "FAILED_PRECONDITION")
		ucErr(t, a.do(http.MethodDelete, apiPrefix+"/catalogs/"+newName+"?force=false", nil), 400, "FAILED_PRECONDITION")
		a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/"+newName, nil)

		del := a.ok(http.StatusOK, http.MethodDelete, apiPrefix+"/catalogs/"+newName+"?force=true", nil)
		if len(del.obj(t)) != 0 {
			t.Fatalf("delete answer = %s, want {}", del.raw)
		}
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs/"+newName, nil), 404, "NOT_FOUND")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/"+newName+".inner", nil), 404, "NOT_FOUND")
		ucErr(t, a.do(http.MethodDelete, apiPrefix+"/catalogs/"+newName, nil), 404, "NOT_FOUND")

		// An empty catalog deletes without force.
		empty := uniq("cat")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": empty})
		a.ok(http.StatusOK, http.MethodDelete, apiPrefix+"/catalogs/"+empty, nil)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs/"+empty, nil), 404, "NOT_FOUND")
	})

	t.Run("catalog rename onto an existing name", func(t *testing.T) {
		a := a.with(t)
		x, y := uniq("cat"), uniq("cat")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": x})
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": y})
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/catalogs/"+x, map[string]any{"new_name": y}), 400, "CATALOG_ALREADY_EXISTS")
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/catalogs/"+x, map[string]any{"new_name": "a.b"}), 400, "INVALID_ARGUMENT")
		a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs/"+x, nil)
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/catalogs/"+uniq("nope"), map[string]any{"comment": "x"}), 404, "NOT_FOUND")
	})

	t.Run("invalid names and bodies", func(t *testing.T) {
		a := a.with(t)
		for _, body := range []any{
			map[string]any{},
			map[string]any{"name": ""},
			map[string]any{"name": "a.b"},
			map[string]any{"name": "a b"},
			map[string]any{"name": "a/b"},
			map[string]any{"name": strings.Repeat("x", 256)},
			`{"name":`,
			`{"name": 5}`,
		} {
			ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", body), 400, "INVALID_ARGUMENT")
		}
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "s.x", "catalog_name": "unity"}), 400, "INVALID_ARGUMENT", "period")
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "ok"}), 400, "INVALID_ARGUMENT", "catalog_name")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/onlyone", nil), 400, "INVALID_ARGUMENT")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/a.b", nil), 400, "INVALID_ARGUMENT")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas", nil), 400, "INVALID_ARGUMENT", "catalog_name")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs?max_results=abc", nil), 400, "INVALID_ARGUMENT")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs?page_token=%21%21", nil), 400, "INVALID_ARGUMENT")
		ucErr(t, a.do(http.MethodDelete, apiPrefix+"/catalogs/unity?force=maybe", nil), 400, "INVALID_ARGUMENT")
	})

	t.Run("not found", func(t *testing.T) {
		a := a.with(t)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs/nope_cat", nil), 404, "NOT_FOUND", "nope_cat")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/unity.nope_schema", nil), 404, "NOT_FOUND", "nope_schema")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/nope_cat.default", nil), 404, "NOT_FOUND", "nope_cat")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas?catalog_name=nope_cat", nil), 404, "NOT_FOUND")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/unity.default.nope_table", nil), 404, "NOT_FOUND", "nope_table")
		ucErr(t, a.do(http.MethodDelete, apiPrefix+"/tables/unity.default.nope_table", nil), 404, "NOT_FOUND")
		ucErr(t, a.do(http.MethodDelete, apiPrefix+"/schemas/unity.nope_schema", nil), 404, "NOT_FOUND")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables?catalog_name=unity&schema_name=nope_schema", nil), 404, "NOT_FOUND")
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "x", "catalog_name": "nope_cat"}), 404, "NOT_FOUND")
	})

	t.Run("schema lifecycle", func(t *testing.T) {
		a := a.with(t)
		cat := uniq("cat")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": cat})
		r := a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{
			"name": "s1", "catalog_name": cat, "comment": "c1", "properties": map[string]any{"p": "1"}})
		s := r.obj(t)
		if s["full_name"] != cat+".s1" || s["comment"] != "c1" || dig(s, "properties", "p") != "1" || str(t, s["schema_id"]) == "" {
			t.Fatalf("created schema = %v", s)
		}
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "s1", "catalog_name": cat}), 400, "SCHEMA_ALREADY_EXISTS")

		got := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas/"+cat+".s1", nil).obj(t)
		if got["schema_id"] != s["schema_id"] {
			t.Fatalf("get schema = %v", got)
		}
		upd := a.ok(http.StatusOK, http.MethodPatch, apiPrefix+"/schemas/"+cat+".s1", map[string]any{"comment": "c2", "new_name": "s2"}).obj(t)
		if upd["name"] != "s2" || upd["full_name"] != cat+".s2" || upd["comment"] != "c2" || upd["schema_id"] != s["schema_id"] {
			t.Fatalf("updated schema = %v", upd)
		}
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/"+cat+".s1", nil), 404, "NOT_FOUND")

		list := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas?catalog_name="+cat, nil).obj(t)
		var names []string
		for _, e := range arr(t, list["schemas"]) {
			names = append(names, str(t, dig(e, "name")))
		}
		if !slices.Equal(names, []string{"s2"}) {
			t.Fatalf("schemas = %v, want [s2]", names)
		}

		// A table blocks a plain schema delete; force removes both.
		a.createManaged(cat, "s2", "t1")
		ucErr(t, a.do(http.MethodDelete, apiPrefix+"/schemas/"+cat+".s2", nil), 400, "FAILED_PRECONDITION")
		a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/"+cat+".s2.t1", nil)
		a.ok(http.StatusOK, http.MethodDelete, apiPrefix+"/schemas/"+cat+".s2?force=true", nil)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/schemas/"+cat+".s2", nil), 404, "NOT_FOUND")
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/"+cat+".s2.t1", nil), 404, "NOT_FOUND")
		// Recreating the schema does not bring the table back.
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "s2", "catalog_name": cat})
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/"+cat+".s2.t1", nil), 404, "NOT_FOUND")
	})

	t.Run("pagination", func(t *testing.T) {
		a := a.with(t)
		prefix := uniq("pg")
		var want []string
		for i := range 5 {
			n := prefix + "_" + strconv.Itoa(i)
			want = append(want, n)
			a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": n})
		}
		// Catalogs: walk every page of 2 and find ours, in order, once each.
		var all []string
		token := ""
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("pagination does not terminate")
			}
			q := "?max_results=2"
			if token != "" {
				q += "&page_token=" + url.QueryEscape(token)
			}
			page := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs"+q, nil).obj(t)
			items := arr(t, page["catalogs"])
			if len(items) > 2 {
				t.Fatalf("page has %d catalogs, max_results=2", len(items))
			}
			for _, c := range items {
				all = append(all, str(t, dig(c, "name")))
			}
			next, _ := page["next_page_token"].(string)
			if next == "" {
				break
			}
			token = next
		}
		if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) {
			t.Fatalf("catalog pages not sorted or repeat names: %v", all)
		}
		if !slices.Contains(all, "unity") {
			t.Fatalf("catalog pages lack unity: %v", all)
		}
		var ours []string
		for _, n := range all {
			if strings.HasPrefix(n, prefix+"_") {
				ours = append(ours, n)
			}
		}
		if !slices.Equal(ours, want) {
			t.Fatalf("our catalogs across pages = %v, want %v", ours, want)
		}

		// Schemas of one catalog: 3 schemas, pages of 2 → 2 + 1.
		cat := want[0]
		for _, s := range []string{"sa", "sb", "sc"} {
			a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": s, "catalog_name": cat})
		}
		p1 := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas?catalog_name="+cat+"&max_results=2", nil).obj(t)
		if n := len(arr(t, p1["schemas"])); n != 2 {
			t.Fatalf("first schema page has %d", n)
		}
		tok := str(t, p1["next_page_token"])
		p2 := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas?catalog_name="+cat+"&max_results=2&page_token="+url.QueryEscape(tok), nil).obj(t)
		s2 := arr(t, p2["schemas"])
		if len(s2) != 1 || dig(s2, 0, "name") != "sc" {
			t.Fatalf("second schema page = %v", s2)
		}
		if tok, _ := p2["next_page_token"].(string); tok != "" {
			t.Fatalf("last schema page has next_page_token %q", tok)
		}

		// Tables of one schema.
		for _, tb := range []string{"ta", "tb", "tc"} {
			a.createManaged(cat, "sa", tb)
		}
		tp := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables?catalog_name="+cat+"&schema_name=sa&max_results=2", nil).obj(t)
		if got := arr(t, tp["tables"]); len(got) != 2 || dig(got, 0, "name") != "ta" || dig(got, 1, "name") != "tb" {
			t.Fatalf("first table page = %v", got)
		}
		tp2 := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables?catalog_name="+cat+"&schema_name=sa&max_results=2&page_token="+
			url.QueryEscape(str(t, tp["next_page_token"])), nil).obj(t)
		if got := arr(t, tp2["tables"]); len(got) != 1 || dig(got, 0, "name") != "tc" {
			t.Fatalf("second table page = %v", got)
		}
	})
}
