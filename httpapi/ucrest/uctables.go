package ucrest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/jsonlimit"
	"github.com/raftcat/raftcat/storage"
)

// deltaTables is where the Delta API creates tables (named in an error).
const deltaTables = Prefix + "/delta/v1"

// dataSourceFormats are the formats UC REST accepts for registered tables.
var dataSourceFormats = []string{"DELTA", "CSV", "JSON", "AVRO", "PARQUET", "ORC", "TEXT"}

type ucColumn struct {
	Name           *string `json:"name"`
	TypeJSON       *string `json:"type_json"`
	Position       *int    `json:"position"`
	Comment        *string `json:"comment"`
	Nullable       *bool   `json:"nullable"`
	PartitionIndex *int    `json:"partition_index"`
}

type ucCreateTable struct {
	Name             *string            `json:"name"`
	CatalogName      *string            `json:"catalog_name"`
	SchemaName       *string            `json:"schema_name"`
	TableType        string             `json:"table_type"`
	DataSourceFormat string             `json:"data_source_format"`
	Columns          []ucColumn         `json:"columns"`
	StorageLocation  string             `json:"storage_location"`
	Comment          *string            `json:"comment"`
	Properties       map[string]*string `json:"properties"`
}

// buildCreateTable registers an EXTERNAL table of any format through UC
// REST. MANAGED tables are created through the Delta API, which owns their
// commit protocol.
func buildCreateTable(in *httpapi.In[ucCreateTable]) (*fsm.CreateTable, error) {
	cmd, err := buildUCCreate(&in.Body)
	if err != nil {
		return nil, err
	}
	cmd.Stamp, cmd.ID = in.Stamp, uuid.NewString()
	if err := in.CheckNotReserved("storage_location", cmd.Location); err != nil {
		return nil, err
	}
	return cmd, nil
}

func buildUCCreate(req *ucCreateTable) (*fsm.CreateTable, error) {
	name, err := httpapi.RequiredName(req.Name, "name")
	if err != nil {
		return nil, err
	}
	catalog, err := httpapi.RequiredName(req.CatalogName, "catalog_name")
	if err != nil {
		return nil, err
	}
	schema, err := httpapi.RequiredName(req.SchemaName, "schema_name")
	if err != nil {
		return nil, err
	}
	switch req.TableType {
	case fsm.TableExternal:
	case fsm.TableManaged:
		return nil, httpapi.Invalid("MANAGED tables are created through the Delta API: POST %s/catalogs/%s/schemas/%s/tables", deltaTables, catalog, schema)
	default:
		return nil, httpapi.Invalid("table_type must be EXTERNAL, got '%s'.", req.TableType)
	}
	format := strings.ToUpper(req.DataSourceFormat)
	if !slices.Contains(dataSourceFormats, format) {
		return nil, httpapi.Invalid("data_source_format must be one of %v, got '%s'.", dataSourceFormats, req.DataSourceFormat)
	}
	if strings.TrimSpace(req.StorageLocation) == "" {
		return nil, httpapi.Invalid("storage_location is required for EXTERNAL tables.")
	}
	if err := httpapi.CheckSize("storage_location", req.StorageLocation, httpapi.MaxLocationBytes); err != nil {
		return nil, err
	}
	loc, err := storage.Normalize(req.StorageLocation)
	if err != nil {
		return nil, httpapi.Invalid("Invalid storage_location: %v", err)
	}
	if err := httpapi.CheckExternalLocation(loc); err != nil {
		return nil, err
	}
	cols, partitions, err := ucColumns(req.Columns)
	if err != nil {
		return nil, err
	}
	props, err := properties(req.Properties)
	if err != nil {
		return nil, err
	}
	if err := httpapi.CheckComment("comment", req.Comment); err != nil {
		return nil, err
	}
	return &fsm.CreateTable{CatalogName: catalog, SchemaName: schema, Name: name, Format: format,
		TableType: fsm.TableExternal, Location: loc, Columns: fsm.ColumnsSpec{Columns: cols.Canonical(), Names: cols.TopLevelNames()},
		PartitionColumns: partitions, Properties: props, Comment: req.Comment, PlainProperties: true}, nil
}

// ucColumns turns UC REST columns (each carrying its Spark StructField
// JSON in type_json) into a struct type, in position order, and the
// partition columns in partition_index order. type_json is validated as
// strictly as the Delta API validates columns, so whatever is stored here
// reads back: the verdict is the same on both paths.
func ucColumns(in []ucColumn) (*deltaschema.Struct, []string, error) {
	for i, col := range in {
		if err := checkColumn(i, col); err != nil {
			return nil, nil, err
		}
	}
	if err := checkOrdinals(in); err != nil {
		return nil, nil, err
	}
	order := make([]int, len(in)) // request indexes, in position order
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return deref(in[a].Position) - deref(in[b].Position) })
	docs := make([]json.RawMessage, len(order))
	for k, i := range order {
		docs[k] = json.RawMessage(*in[i].TypeJSON)
	}
	path := func(k int) string { return fmt.Sprintf("columns[%d].type_json", order[k]) }
	st, err := deltaschema.ParseSparkFields(docs, path)
	if err != nil {
		return nil, nil, httpapi.Invalid("%s", err.Error())
	}
	for k, i := range order {
		if got := st.Fields[k].Name; got != *in[i].Name {
			return nil, nil, httpapi.Invalid("columns[%d].name '%s' does not match the name in columns[%d].type_json: '%s'.", i, *in[i].Name, i, got)
		}
		if err := httpapi.CheckColumn(path(k), &st.Fields[k]); err != nil {
			return nil, nil, err
		}
	}
	return st, partitionNames(in, order), nil
}

// checkOrdinals refuses positions and partition indexes that do not
// order the columns: negative ones, one given twice, and positions given
// for some columns only (given for none, the request's order is theirs).
func checkOrdinals(in []ucColumn) error {
	hasPosition := slices.IndexFunc(in, func(c ucColumn) bool { return c.Position != nil })
	positions, parts := map[int]int{}, map[int]int{}
	for i, col := range in {
		if hasPosition >= 0 && col.Position == nil {
			return httpapi.Invalid("columns[%d].position is required when columns[%d] has one.", i, hasPosition)
		}
		if err := checkOrdinal(i, "position", col.Position, positions); err != nil {
			return err
		}
		if err := checkOrdinal(i, "partition_index", col.PartitionIndex, parts); err != nil {
			return err
		}
	}
	return nil
}

// checkOrdinal checks column i's value of field, non-negative and not
// taken already (seen maps a value to the column that has it).
func checkOrdinal(i int, field string, v *int, seen map[int]int) error {
	if v == nil {
		return nil
	}
	if *v < 0 {
		return httpapi.Invalid("columns[%d].%s must not be negative, got %d.", i, field, *v)
	}
	if j, dup := seen[*v]; dup {
		return httpapi.Invalid("columns[%d].%s %d is also columns[%d]'s.", i, field, *v, j)
	}
	seen[*v] = i
	return nil
}

// checkColumn checks what a column needs before its type_json is parsed.
func checkColumn(i int, col ucColumn) error {
	if col.Name == nil || *col.Name == "" {
		return httpapi.Invalid("columns[%d].name is required.", i)
	}
	if col.TypeJSON == nil || *col.TypeJSON == "" {
		return httpapi.Invalid("columns[%d].type_json is required.", i)
	}
	if err := jsonlimit.Check([]byte(*col.TypeJSON)); err != nil {
		return httpapi.Invalid("Invalid columns[%d].type_json: %v", i, err)
	}
	return nil
}

// partitionNames lists the names of the columns with a partition_index,
// in that index's order.
func partitionNames(in []ucColumn, order []int) []string {
	var parts []int
	for _, i := range order {
		if in[i].PartitionIndex != nil {
			parts = append(parts, i)
		}
	}
	slices.SortStableFunc(parts, func(a, b int) int { return *in[a].PartitionIndex - *in[b].PartitionIndex })
	names := make([]string, len(parts))
	for k, i := range parts {
		names[k] = *in[i].Name
	}
	return names
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
