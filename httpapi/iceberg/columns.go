package iceberg

import (
	"context"
	"encoding/json"
	"fmt"

	iceberg "github.com/apache/iceberg-go"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
)

// ucColumns is an Iceberg table's current schema as a Delta struct type,
// for UC REST's columns: each Iceberg type as Spark reads it (long,
// timestamp_ntz for timestamp, timestamp for timestamptz, string for
// uuid, binary for fixed), required fields not nullable, docs as
// comments.
func (s *Server) ucColumns(ctx context.Context, t *fsm.Table) (*deltaschema.Struct, error) {
	if t.Iceberg == nil || t.Iceberg.MetadataLocation == "" {
		return nil, fmt.Errorf("table %s has no metadata file", t.FullName())
	}
	f, err := s.readMetadata(ctx, t.Iceberg.MetadataLocation)
	if err != nil {
		return nil, err
	}
	sch := f.meta.CurrentSchema()
	if sch == nil {
		return nil, fmt.Errorf("metadata file %s has no current schema", f.location)
	}
	return structOf(sch.Fields()), nil
}

func structOf(fields []iceberg.NestedField) *deltaschema.Struct {
	st := &deltaschema.Struct{Fields: make([]deltaschema.Field, len(fields))}
	for i, nf := range fields {
		md := json.RawMessage("{}")
		if nf.Doc != "" {
			md, _ = json.Marshal(map[string]string{"comment": nf.Doc})
		}
		st.Fields[i] = deltaschema.Field{Name: nf.Name, Type: deltaType(nf.Type), Nullable: !nf.Required, Metadata: md}
	}
	return st
}

// sparkPrimitives are the Spark types of Iceberg's primitives; any other
// keeps its Iceberg name.
var sparkPrimitives = map[string]string{
	"boolean": "boolean", "int": "integer", "long": "long", "float": "float", "double": "double",
	"date": "date", "time": "long", "timestamp": "timestamp_ntz", "timestamptz": "timestamp",
	"timestamp_ns": "timestamp_ntz", "timestamptz_ns": "timestamp", "string": "string", "uuid": "string",
	"binary": "binary", "variant": "variant",
}

func deltaType(t iceberg.Type) deltaschema.Type {
	switch t := t.(type) {
	case *iceberg.StructType:
		return structOf(t.FieldList)
	case *iceberg.ListType:
		return &deltaschema.Array{ElementType: deltaType(t.Element), ContainsNull: !t.ElementRequired}
	case *iceberg.MapType:
		return &deltaschema.Map{KeyType: deltaType(t.KeyType), ValueType: deltaType(t.ValueType), ValueContainsNull: !t.ValueRequired}
	case iceberg.DecimalType:
		return &deltaschema.Decimal{Precision: t.Precision(), Scale: t.Scale()}
	case iceberg.FixedType:
		return &deltaschema.Primitive{Name: "binary"}
	}
	if name, ok := sparkPrimitives[t.Type()]; ok {
		return &deltaschema.Primitive{Name: name}
	}
	return &deltaschema.Primitive{Name: t.Type()}
}
