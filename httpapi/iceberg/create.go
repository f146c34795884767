package iceberg

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

type createTableBody struct {
	Name          *string           `json:"name"`
	Location      string            `json:"location"`
	Schema        json.RawMessage   `json:"schema"`
	PartitionSpec json.RawMessage   `json:"partition-spec"`
	WriteOrder    json.RawMessage   `json:"write-order"`
	StageCreate   bool              `json:"stage-create"`
	Properties    map[string]string `json:"properties"`
}

// newTable is a table about to be created: where, and its metadata.
type newTable struct {
	ref      ref
	location string
	managed  bool
	meta     table.Metadata
}

func (s *Server) buildCreateTable(in *httpapi.In[createTableBody]) (fsm.Command, error) {
	nt, err := s.planCreate(in)
	if err != nil {
		return nil, err
	}
	if in.Body.StageCreate {
		return nil, s.stagedAnswer(in, nt)
	}
	return s.proposeCreate(in, in.Stamp, nt)
}

// freeRef is where a new table or view goes: the request's namespace and
// the body's name, which no table or view holds in the state returned.
func (s *Server) freeRef(c echo.Context, name *string, what string) (ref, *fsm.State, error) {
	r, err := namespaceRef(c)
	if err != nil {
		return ref{}, nil, err
	}
	if r.name, err = httpapi.RequiredName(name, what); err != nil {
		return ref{}, nil, err
	}
	st, err := s.core.State(c)
	if err != nil {
		return ref{}, nil, err
	}
	return r, st, checkNameFree(st, r)
}

// planCreate checks a create request and builds the table's metadata.
func (s *Server) planCreate(in *httpapi.In[createTableBody]) (*newTable, error) {
	r, st, err := s.freeRef(in, in.Body.Name, "Table name")
	if err != nil {
		return nil, err
	}
	nt := &newTable{ref: r}
	id := uuid.New()
	if nt.location, nt.managed, err = tableLocation(st, r, in.Body.Location, id); err != nil {
		return nil, err
	}
	if err := in.CheckNotReserved("Table location", nt.location); err != nil {
		return nil, err
	}
	nt.meta, err = createMetadata(&in.Body, nt.location, id)
	return nt, err
}

// checkNameFree refuses a create in a missing namespace or over any
// existing table or view of the name.
func checkNameFree(st *fsm.State, r ref) error {
	if _, err := lookupNamespace(st, r); err != nil {
		return err
	}
	if tb, taken := st.TableIn(r.path(), r.name); taken {
		return fsm.Errf(fsm.CodeTableExists, "Table or view already exists: %s (%s %s)", r.dotted(), tb.Format, strings.ToLower(tb.Type))
	}
	return nil
}

// tableLocation is the requested location, or the schema's managed root
// + /tables/<uuid>; managed tells which.
func tableLocation(st *fsm.State, r ref, requested string, id uuid.UUID) (string, bool, error) {
	if requested != "" {
		loc, err := storage.Normalize(requested)
		if err != nil {
			return "", false, httpapi.Invalid("Invalid table location: %v", err)
		}
		return strings.TrimRight(loc, "/"), false, httpapi.CheckExternalLocation(loc)
	}
	root := st.ManagedRoot(r.warehouse, r.levels[0])
	if root == "" {
		return "", false, httpapi.Invalid("No managed storage location is configured for %s; give the table a location.", r.dotted())
	}
	return root + "/tables/" + id.String(), true, nil
}

// createMetadata builds fresh metadata (ids reassigned) from a request.
func createMetadata(b *createTableBody, loc string, id uuid.UUID) (table.Metadata, error) {
	if len(b.Schema) == 0 || string(b.Schema) == "null" {
		return nil, httpapi.Invalid("A table needs a schema")
	}
	var sc iceberg.Schema
	if err := json.Unmarshal(b.Schema, &sc); err != nil {
		return nil, httpapi.Invalid("Invalid schema: %v", err)
	}
	spec := iceberg.UnpartitionedSpec
	if len(b.PartitionSpec) > 0 && string(b.PartitionSpec) != "null" {
		var u iceberg.UnboundPartitionSpec
		if err := json.Unmarshal(b.PartitionSpec, &u); err != nil {
			return nil, httpapi.Invalid("Invalid partition-spec: %v", err)
		}
		spec = &u.PartitionSpec
	}
	order := table.UnsortedSortOrder
	if len(b.WriteOrder) > 0 && string(b.WriteOrder) != "null" {
		var u table.UnboundSortOrder
		if err := json.Unmarshal(b.WriteOrder, &u); err != nil {
			return nil, httpapi.Invalid("Invalid write-order: %v", err)
		}
		order = u.SortOrder
	}
	meta, err := table.NewMetadataWithUUID(&sc, spec, order, loc, b.Properties, id)
	if err != nil {
		return nil, httpapi.Invalid("Invalid table: %v", err)
	}
	return meta, nil
}

// proposeCreate writes version 0's metadata file and builds the create.
func (s *Server) proposeCreate(in echo.Context, stamp fsm.Stamp, nt *newTable) (fsm.Command, error) {
	f, err := s.writeNew(in, metadataLocation(nt.location, 0), nt.meta, nil)
	if err != nil {
		return nil, err
	}
	tt := fsm.TableExternal
	if nt.managed {
		tt = fsm.TableManaged
	}
	return &fsm.CreateIcebergTable{Stamp: stamp, ID: nt.meta.TableUUID().String(), Namespace: nt.ref.path(),
		Name: nt.ref.name, TableType: tt, Location: nt.location, MetadataLocation: f.location,
		Properties: nt.meta.Properties()}, nil
}

// stagedAnswer answers a staged create: its metadata, no location, no
// tag; nothing is persisted. Credentials asked for are to write the
// table's files before the commit that creates it, by the caller who may
// create it.
func (s *Server) stagedAnswer(c echo.Context, nt *newTable) error {
	raw, err := json.Marshal(nt.meta)
	if err != nil {
		return err
	}
	out := loadResult{Metadata: raw, Config: map[string]string{}}
	if out.StorageCredentials, err = s.delegate(c, nt.location, opReadWrite, out.Config); err != nil {
		return err
	}
	return &settled{status: http.StatusOK, body: out}
}
