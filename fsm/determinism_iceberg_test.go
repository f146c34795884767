package fsm_test

import (
	"slices"

	"github.com/raftcat/raftcat/fsm"
)

// icebergTables lists the Iceberg tables of schemas and of the namespaces
// one level below them.
func (g *logGen) icebergTables() []*fsm.Table {
	st := g.driver.State()
	var out []*fsm.Table
	for _, s := range g.schemas() {
		paths := [][]string{{s.CatalogName, s.Name}}
		for _, n := range st.Namespaces(paths[0], "", 0) {
			paths = append(paths, n.Path)
		}
		for _, p := range paths {
			for _, tb := range st.TablesIn(p, "", 0) {
				if tb.Format == fsm.FormatIceberg {
					out = append(out, tb)
				}
			}
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
	case r < 30 || len(ts) < 3:
		g.emit(&fsm.CreateIcebergTable{Stamp: g.stamp(), ID: g.id("ice"), Namespace: g.icebergNamespace(),
			Name: g.icebergName(), Location: "s3://ice/" + g.name("l", 12), MetadataLocation: "s3://ice/m/" + g.id("m"),
			Properties: map[string]string{"format-version": "2"}})
	case r < 62:
		g.icebergCommit(ts)
	case r < 72:
		tb := ts[g.pick(len(ts))]
		g.emit(&fsm.DropIcebergTable{Stamp: g.stamp(), Namespace: tb.NamespacePath(), Name: tb.Name})
	case r < 80:
		tb := ts[g.pick(len(ts))]
		g.emit(&fsm.RenameIcebergTable{Stamp: g.stamp(), Namespace: tb.NamespacePath(), Name: tb.Name,
			NewNamespace: g.icebergNamespace(), NewName: g.icebergName()})
	default:
		path := g.icebergNamespace()
		g.emit(&fsm.UpdateNamespaceProperties{Stamp: g.stamp(), Path: path[:1+g.pick(len(path))],
			Updates: map[string]string{g.name("p", 3): g.id("v")}, Removals: []string{g.name("q", 3), g.name("p", 3)}})
	}
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

// icebergVariety counts the applied multi-table commits and namespace
// property updates among results.
func icebergVariety(results []fsm.Result) (multi, props int) {
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
	}
	return multi, props
}
