package fsm_test

import (
	"slices"

	"github.com/raftcat/raftcat/fsm"
)

// icebergTables lists the Iceberg tables of schemas and of the namespaces
// one level below them.
func (g *logGen) icebergTables() []*fsm.Table {
	return g.icebergKind(func(tb *fsm.Table) bool { return tb.Format == fsm.FormatIceberg && !tb.IsView() })
}

// icebergViews lists the views where icebergTables looks for tables.
func (g *logGen) icebergViews() []*fsm.Table { return g.icebergKind((*fsm.Table).IsView) }

// icebergKind lists the tables keep accepts in schemas and the namespaces
// one level below them.
func (g *logGen) icebergKind(keep func(*fsm.Table) bool) []*fsm.Table {
	st := g.driver.State()
	var out []*fsm.Table
	for _, s := range g.schemas() {
		paths := [][]string{{s.CatalogName, s.Name}}
		for _, n := range st.Namespaces(paths[0], "", 0) {
			paths = append(paths, n.Path)
		}
		for _, p := range paths {
			out = append(out, st.TablesInWhere(p, "", 0, keep)...)
		}
	}
	return out
}

// icebergNamespace is a schema or a namespace below one, sometimes missing.
func (g *logGen) icebergNamespace() []string {
	cat, sch := g.schemaRef()
	if g.chance(40) {
		return []string{cat, sch, g.name("n", 3)}
	}
	return []string{cat, sch}
}

// icebergName is mostly a name of Iceberg's own, sometimes one Delta
// tables use too.
func (g *logGen) icebergName() string {
	if g.chance(20) {
		return g.name("t", 7)
	}
	return g.name("i", 7)
}

// icebergCmd emits one Iceberg table or namespace property command.
func (g *logGen) icebergCmd() {
	ts := g.icebergTables()
	switch r := g.pick(100); {
	case r < 25 || len(ts) < 3:
		g.emit(&fsm.CreateIcebergTable{Stamp: g.stamp(), ID: g.id("ice"), Namespace: g.icebergNamespace(),
			Name: g.icebergName(), Location: "s3://ice/" + g.name("l", 12), MetadataLocation: "s3://ice/m/" + g.id("m"),
			Properties: map[string]string{"format-version": "2"}})
	case r < 50:
		g.icebergCommit(ts)
	case r < 58:
		tb := ts[g.pick(len(ts))]
		g.emit(&fsm.DropIcebergTable{Stamp: g.stamp(), Namespace: tb.NamespacePath(), Name: tb.Name})
	case r < 65:
		tb := ts[g.pick(len(ts))]
		g.emit(&fsm.RenameIcebergTable{Stamp: g.stamp(), Namespace: tb.NamespacePath(), Name: tb.Name,
			NewNamespace: g.icebergNamespace(), NewName: g.icebergName()})
	case r < 88:
		g.viewCmd(ts)
	default:
		path := g.icebergNamespace()
		g.emit(&fsm.UpdateNamespaceProperties{Stamp: g.stamp(), Path: path[:1+g.pick(len(path))],
			Updates: map[string]string{g.name("p", 3): g.id("v")}, Removals: []string{g.name("q", 3), g.name("p", 3)}})
	}
}

// viewCmd emits one view command: creates (some over a table's name),
// replaces (some stale, some replayed), drops and renames, and sometimes a
// table command aimed at a view or a view command aimed at a table.
func (g *logGen) viewCmd(ts []*fsm.Table) {
	vs := g.icebergViews()
	switch r := g.pick(100); {
	case r < 30 || len(vs) == 0:
		name := g.name("v", 5)
		if g.chance(15) {
			name = ts[g.pick(len(ts))].Name
		}
		g.emit(&fsm.CreateIcebergView{Stamp: g.stamp(), ID: g.id("view"), Namespace: g.icebergNamespace(), Name: name,
			MetadataLocation: "s3://ice/vm/" + g.id("m"), Properties: map[string]string{"k": g.id("v")}})
	case r < 65:
		g.viewReplace(vs)
	case r < 75:
		v := vs[g.pick(len(vs))]
		g.emit(&fsm.DropIcebergView{Stamp: g.stamp(), Namespace: v.NamespacePath(), Name: v.Name})
	case r < 88:
		v := vs[g.pick(len(vs))]
		g.emit(&fsm.RenameIcebergView{Stamp: g.stamp(), Namespace: v.NamespacePath(), Name: v.Name,
			NewNamespace: g.icebergNamespace(), NewName: g.name("v", 5)})
	case r < 94:
		v := vs[g.pick(len(vs))]
		g.emit(&fsm.DropIcebergTable{Stamp: g.stamp(), Namespace: v.NamespacePath(), Name: v.Name})
	default:
		tb := ts[g.pick(len(ts))]
		g.emit(&fsm.DropIcebergView{Stamp: g.stamp(), Namespace: tb.NamespacePath(), Name: tb.Name})
	}
}

// viewReplace replaces a view from its current pointer, sometimes from a
// stale one, sometimes replaying the last replace.
func (g *logGen) viewReplace(vs []*fsm.Table) {
	if g.lastView != nil && g.chance(15) {
		g.emit(g.lastView)
		return
	}
	v := vs[g.pick(len(vs))]
	c := &fsm.ReplaceIcebergView{Stamp: g.stamp(), Namespace: slices.Clone(v.NamespacePath()), Name: v.Name,
		BaseMetadataLocation: v.Iceberg.MetadataLocation, MetadataLocation: "s3://ice/vm/" + g.id("m")}
	if g.chance(20) {
		c.BaseMetadataLocation = "s3://ice/vm/stale"
	}
	if g.chance(30) {
		c.Properties = &map[string]string{"k": g.id("v")}
	}
	g.lastView = c
	g.emit(c)
}

// icebergCommit commits to one to three tables, mostly from their current
// pointers, sometimes from a stale one, sometimes replaying the last commit.
func (g *logGen) icebergCommit(ts []*fsm.Table) {
	if g.lastIceberg != nil && g.chance(10) {
		g.emit(g.lastIceberg)
		return
	}
	c := &fsm.CommitIcebergTables{Stamp: g.stamp()}
	g.rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	stale := -1
	if g.chance(20) {
		stale = g.pick(3)
	}
	for i, tb := range ts[:1+g.pick(3)] {
		e := fsm.IcebergCommit{Namespace: slices.Clone(tb.NamespacePath()), Name: tb.Name,
			BaseMetadataLocation: tb.Iceberg.MetadataLocation, MetadataLocation: "s3://ice/m/" + g.id("m")}
		if i == stale {
			e.BaseMetadataLocation = "s3://ice/m/stale"
		}
		if g.chance(20) {
			e.Properties = &map[string]string{"k": g.id("v")}
		}
		if g.chance(10) {
			e.Location = "s3://ice/" + g.name("l", 12)
		}
		c.Tables = append(c.Tables, e)
	}
	g.lastIceberg = c
	g.emit(c)
}

// icebergVariety counts the applied multi-table commits, namespace
// property updates and view changes among results.
func icebergVariety(results []fsm.Result) (multi, props, views int) {
	for _, r := range results {
		if r.Err != nil || r.NoOp {
			continue
		}
		if len(r.Tables) > 1 {
			multi++
		}
		if r.Properties != nil {
			props++
		}
		if r.Table != nil && r.Table.IsView() {
			views++
		}
	}
	return multi, props, views
}
