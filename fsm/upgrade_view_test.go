package fsm_test

import (
	"encoding/json"
	"slices"

	"github.com/raftcat/raftcat/fsm"
)

// The views below are how upgrade fixtures record state and results: built
// only from the exported reading API, so that the same view computed by an
// older release and by this one must be equal whatever the in-memory or
// serialised layout of the entities.

type tableView struct {
	ID               string              `json:"id"`
	FullName         string              `json:"full_name"`
	Format           string              `json:"format"`
	Type             string              `json:"type"`
	Location         string              `json:"location"`
	Comment          *string             `json:"comment,omitempty"`
	Columns          json.RawMessage     `json:"columns,omitempty"`
	ColumnNames      []string            `json:"column_names,omitempty"`
	PartitionColumns []string            `json:"partition_columns,omitempty"`
	Properties       map[string]string   `json:"properties,omitempty"`
	Uniform          *fsm.IcebergUniform `json:"uniform,omitempty"`
	Owner            string              `json:"owner,omitempty"`
	CreatedAt        int64               `json:"created_at"`
	CreatedBy        string              `json:"created_by,omitempty"`
	UpdatedAt        int64               `json:"updated_at"`
	UpdatedBy        string              `json:"updated_by,omitempty"`
	MetaIndex        uint64              `json:"meta_index"`
	Commits          []fsm.Commit        `json:"commits,omitempty"`
	ETag             string              `json:"etag"`
	Latest           int64               `json:"latest_version"`
	Unbackfilled     []fsm.Commit        `json:"unbackfilled,omitempty"`
}

func viewTable(tb *fsm.Table) *tableView {
	if tb == nil {
		return nil
	}
	return &tableView{ID: tb.ID, FullName: tb.FullName(), Format: tb.Format, Type: tb.Type, Location: tb.Location,
		Comment: tb.Comment, Columns: tb.Columns, ColumnNames: tb.ColumnNames, PartitionColumns: tb.PartitionColumns,
		Properties: tb.Properties, Uniform: tb.Uniform, Owner: tb.Owner, CreatedAt: tb.CreatedAt, CreatedBy: tb.CreatedBy,
		UpdatedAt: tb.UpdatedAt, UpdatedBy: tb.UpdatedBy, MetaIndex: tb.MetaIndex, Commits: tb.Commits,
		ETag: tb.ETag(), Latest: tb.LatestVersion(), Unbackfilled: tb.UnbackfilledCommits()}
}

type resultView struct {
	Err     *fsm.Error        `json:"err,omitempty"`
	Catalog *fsm.Catalog      `json:"catalog,omitempty"`
	Schema  *fsm.Schema       `json:"schema,omitempty"`
	Table   *tableView        `json:"table,omitempty"`
	Staging *fsm.StagingTable `json:"staging,omitempty"`
	NoOp    bool              `json:"noop,omitempty"`
}

func viewResult(r fsm.Result) resultView {
	return resultView{Err: r.Err, Catalog: r.Catalog, Schema: r.Schema, Table: viewTable(r.Table), Staging: r.Staging, NoOp: r.NoOp}
}

type schemaView struct {
	Schema *fsm.Schema  `json:"schema"`
	Tables []*tableView `json:"tables,omitempty"`
}

type catalogView struct {
	Catalog *fsm.Catalog `json:"catalog"`
	Schemas []schemaView `json:"schemas,omitempty"`
}

type stagingView struct {
	ID         string            `json:"id"`
	Row        *fsm.StagingTable `json:"row,omitempty"`
	ByLocation bool              `json:"by_location,omitempty"`
}

type stateView struct {
	Initialized bool           `json:"initialized"`
	Metastore   *fsm.Metastore `json:"metastore,omitempty"`
	Counts      [4]int         `json:"counts"`
	Catalogs    []catalogView  `json:"catalogs,omitempty"`
	Staging     []stagingView  `json:"staging,omitempty"`
}

// viewState walks everything the reading API lists, plus the staging rows
// with the given ids (staging rows are looked up, never listed).
func viewState(st *fsm.State, stagingIDs []string) stateView {
	v := stateView{Initialized: st.Initialized(), Metastore: st.Metastore()}
	c, s, t, m := st.Counts()
	v.Counts = [4]int{c, s, t, m}
	for _, cat := range st.Catalogs("", 0) {
		cv := catalogView{Catalog: cat}
		for _, sch := range st.Schemas(cat.Name, "", 0) {
			sv := schemaView{Schema: sch}
			for _, tb := range st.Tables(cat.Name, sch.Name, "", 0) {
				sv.Tables = append(sv.Tables, viewTable(tb))
			}
			cv.Schemas = append(cv.Schemas, sv)
		}
		v.Catalogs = append(v.Catalogs, cv)
	}
	ids := slices.Clone(stagingIDs)
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		sv := stagingView{ID: id}
		if row, ok := st.StagingTable(id); ok {
			sv.Row = row
			got, ok := st.StagingByLocation(row.Location)
			sv.ByLocation = ok && got.ID == id
		}
		v.Staging = append(v.Staging, sv)
	}
	return v
}
