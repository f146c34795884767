package ucrest

import (
	"encoding/json"
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
	Name             *string           `json:"name"`
	CatalogName      *string           `json:"catalog_name"`
	SchemaName       *string           `json:"schema_name"`
	TableType        string            `json:"table_type"`
	DataSourceFormat string            `json:"data_source_format"`
	Columns          []ucColumn        `json:"columns"`
	StorageLocation  string            `json:"storage_location"`
	Comment          *string           `json:"comment"`
	Properties       map[string]string `json:"properties"`
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
	return &fsm.CreateTable{CatalogName: catalog, SchemaName: schema, Name: name, Format: format,
		TableType: fsm.TableExternal, Location: loc, Columns: fsm.ColumnsSpec{Columns: cols.Canonical(), Names: cols.TopLevelNames()},
		PartitionColumns: partitions, Properties: req.Properties, Comment: req.Comment, PlainProperties: true}, nil
}

// ucColumns turns UC REST columns (each carrying its Spark StructField
// JSON in type_json) into a struct type and the partition columns in
// partition_index order.
func ucColumns(in []ucColumn) (*deltaschema.Struct, []string, error) {
	cols := slices.Clone(in)
	slices.SortStableFunc(cols, func(a, b ucColumn) int { return deref(a.Position) - deref(b.Position) })
	fields := make([]json.RawMessage, 0, len(cols))
	type part struct {
		name  string
		index int
	}
	var parts []part
	for i, col := range cols {
		if col.Name == nil || *col.Name == "" {
			return nil, nil, httpapi.Invalid("columns[%d].name is required.", i)
		}
		if col.TypeJSON == nil || *col.TypeJSON == "" {
			return nil, nil, httpapi.Invalid("columns[%d].type_json is required.", i)
		}
		if err := jsonlimit.Check([]byte(*col.TypeJSON)); err != nil {
			return nil, nil, httpapi.Invalid("Invalid columns[%d].type_json: %v", i, err)
		}
		fields = append(fields, json.RawMessage(*col.TypeJSON))
		if col.PartitionIndex != nil {
			parts = append(parts, part{*col.Name, *col.PartitionIndex})
		}
	}
	schemaString, err := json.Marshal(map[string]any{"type": "struct", "fields": fields})
	if err != nil {
		return nil, nil, httpapi.Invalid("Invalid columns: type_json is not valid JSON")
	}
	st, err := deltaschema.ParseSchemaString(string(schemaString))
	if err != nil {
		return nil, nil, httpapi.Invalid("Invalid columns: %v", err)
	}
	slices.SortStableFunc(parts, func(a, b part) int { return a.index - b.index })
	partitions := make([]string, len(parts))
	for i, p := range parts {
		partitions[i] = p.name
	}
	return st, partitions, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
