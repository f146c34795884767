package deltaapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

func buildCreateTable(in *httpapi.In[createTableRequest]) (*fsm.CreateTable, error) {
	cmd, err := buildCreate(&in.Body, in.Found)
	if err != nil {
		return nil, err
	}
	cmd.Stamp = in.Stamp
	cmd.CatalogName, cmd.SchemaName = in.Param("catalog"), in.Param("schema")
	if cmd.TableType == fsm.TableExternal {
		cmd.ID = uuid.NewString()
		if err := in.CheckNotReserved("Table location", cmd.Location); err != nil {
			return nil, err
		}
	}
	return cmd, nil
}

// buildCreate checks a create request in UC's order as far as it needs
// no state, and translates it into a command; the FSM checks the rest
// (existence, staging ownership and identity).
func buildCreate(req *createTableRequest, found bool) (*fsm.CreateTable, error) {
	if !found {
		return nil, invalid("Request body is required.")
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return nil, invalid("Table name is required.")
	}
	if req.Location == nil || strings.TrimSpace(*req.Location) == "" {
		return nil, invalid("Table location is required.")
	}
	cols, err := deltaschema.Parse("columns", req.Columns)
	if err != nil {
		return nil, invalid("%s", err.Error())
	}
	if req.TableType == nil {
		return nil, invalid("table-type is required.")
	}
	tableType := *req.TableType
	if tableType != fsm.TableManaged && tableType != fsm.TableExternal {
		return nil, invalid("table-type must be MANAGED or EXTERNAL, got '%s'.", tableType)
	}
	if req.Protocol == nil {
		return nil, invalid("protocol is required.")
	}
	if req.LastCommitTimestampMs == nil {
		return nil, invalid("last-commit-timestamp-ms is required.")
	}
	props, nullKeys := splitNullProperties(req.Properties)
	protocol := req.Protocol.toFSM()
	dm := req.DomainMetadata.toFSM()
	if tableType == fsm.TableManaged {
		hasClustering := dm != nil && dm.ClusteringColumns != nil
		hasRowTracking := dm != nil && dm.RowIDHighWaterMark != nil
		if cerr := fsm.CheckManagedContract(protocol, props, nullKeys, hasClustering, hasRowTracking); cerr != nil {
			return nil, cerr
		}
	}
	if err := checkDeltaVersions(req.Protocol, "protocol"); err != nil {
		return nil, err
	}
	if err := refuseNulls(nullKeys, "properties"); err != nil {
		return nil, err
	}
	if err := checkCreateSizes(req, cols, dm); err != nil {
		return nil, err
	}
	location, err := storage.Normalize(*req.Location)
	if err != nil {
		return nil, invalid("Invalid table location: %v", err)
	}
	uni, err := checkCreateUniform(req.Uniform, props, location)
	if err != nil {
		return nil, err
	}
	partitions, perr := fsm.ResolvePartitionColumns(cols.TopLevelNames(), req.PartitionColumns)
	if perr != nil {
		return nil, perr
	}
	if err := httpapi.CheckName(*req.Name); err != nil {
		return nil, err
	}
	if tableType == fsm.TableExternal {
		if err := httpapi.CheckExternalLocation(location); err != nil {
			return nil, err
		}
	}
	return &fsm.CreateTable{Name: *req.Name, Format: fsm.FormatDelta, TableType: tableType, Location: location,
		Columns: fsm.ColumnsSpec{Columns: cols.Canonical(), Names: cols.TopLevelNames()}, PartitionColumns: partitions,
		Protocol: protocol, Properties: props, DomainMetadata: dm, Uniform: uni, Comment: req.Comment,
		LastCommitTimestampMs: *req.LastCommitTimestampMs}, nil
}

// splitNullProperties separates JSON-null property values (which the
// managed contract reports as 'null') from real ones.
func splitNullProperties(in map[string]*string) (map[string]string, map[string]bool) {
	props, nulls := map[string]string{}, map[string]bool{}
	for k, v := range in {
		if v == nil {
			nulls[k] = true
			continue
		}
		props[k] = *v
	}
	return props, nulls
}

// refuseNulls refuses JSON-null property values (after the managed
// contract has had its say about required ones): a property's value is a
// string. member names the request member in the message.
func refuseNulls(nullKeys map[string]bool, member string) error {
	if len(nullKeys) == 0 {
		return nil
	}
	k := slices.Min(slices.Collect(maps.Keys(nullKeys)))
	return invalid("%s['%s'] must be a string, not null.", member, k)
}

// checkDeltaVersions requires reader and writer versions of at least 1,
// as every Delta protocol has (the managed contract checks its own
// minimums first); path names the protocol in the request.
func checkDeltaVersions(p *deltaProtocol, path string) error {
	for _, v := range []struct {
		name string
		v    *int
	}{{"min-reader-version", p.MinReaderVersion}, {"min-writer-version", p.MinWriterVersion}} {
		if v.v == nil {
			return invalid("%s.%s is required.", path, v.name)
		}
		if *v.v < 1 {
			return invalid("%s.%s must be at least 1, got %d.", path, v.name, *v.v)
		}
	}
	return nil
}

// checkCreateSizes refuses string fields of a create over their limits
// (see httpapi.MaxCommentBytes and its siblings).
func checkCreateSizes(req *createTableRequest, cols *deltaschema.Struct, dm *fsm.DomainMetadata) error {
	if err := httpapi.CheckSize("location", *req.Location, httpapi.MaxLocationBytes); err != nil {
		return err
	}
	if err := httpapi.CheckComment("comment", req.Comment); err != nil {
		return err
	}
	if err := httpapi.CheckProperties("properties", req.Properties); err != nil {
		return err
	}
	if err := httpapi.CheckColumns("columns", cols); err != nil {
		return err
	}
	return checkClustering("domain-metadata", dm)
}

// checkClustering refuses a clustering column name over the column name
// limit; path names the domain metadata in the request.
func checkClustering(path string, dm *fsm.DomainMetadata) error {
	if dm == nil || dm.ClusteringColumns == nil {
		return nil
	}
	for i, col := range *dm.ClusteringColumns {
		for j, part := range col {
			field := fmt.Sprintf("%s.delta.clustering.clusteringColumns[%d][%d]", path, i, j)
			if err := httpapi.CheckSize(field, part, httpapi.MaxColumnNameBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCreateUniform applies the create-time UniForm rules.
func checkCreateUniform(u *uniform, props map[string]string, location string) (*fsm.IcebergUniform, error) {
	enabled := false
	for _, f := range strings.Split(props[fsm.PropUniformFormats], ",") {
		enabled = enabled || strings.EqualFold(strings.TrimSpace(f), "iceberg")
	}
	switch {
	case enabled && u == nil:
		return nil, invalid("Uniform metadata must be set when '%s' includes 'iceberg'.", fsm.PropUniformFormats)
	case !enabled && u != nil:
		return nil, invalid("Uniform metadata must not be set unless '%s' includes 'iceberg'.", fsm.PropUniformFormats)
	case u == nil:
		return nil, nil
	}
	ic, err := checkUniformShape(u)
	if err != nil {
		return nil, err
	}
	if ic.ConvertedDeltaVersion != 0 && ic.ConvertedDeltaVersion != 1 {
		return nil, invalid("uniform.iceberg.converted-delta-version must be 0 or 1 at create time, got %d.", ic.ConvertedDeltaVersion)
	}
	if ic.BaseConvertedDeltaVersion != nil {
		return nil, invalid("uniform.iceberg.base-converted-delta-version must not be set at create time: %d.", *ic.BaseConvertedDeltaVersion)
	}
	if !storage.IsUnder(ic.MetadataLocation, location) {
		return nil, invalid("uniform.iceberg.metadata-location ('%s') must be a subpath of the table location ('%s').", ic.MetadataLocation, location)
	}
	return ic, nil
}
