package iceberg

import (
	"maps"
	"strings"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

type registerBody struct {
	Name             *string `json:"name"`
	MetadataLocation *string `json:"metadata-location"`
	Overwrite        bool    `json:"overwrite"`
}

// buildRegister makes an existing metadata file a table. With overwrite,
// an existing Iceberg table of the name has its pointer swapped to it.
func (s *Server) buildRegister(in *httpapi.In[registerBody]) (fsm.Command, error) {
	r, err := namespaceRef(in)
	if err != nil {
		return nil, err
	}
	if r.name, err = httpapi.RequiredName(in.Body.Name, "Table name"); err != nil {
		return nil, err
	}
	if in.Body.MetadataLocation == nil || *in.Body.MetadataLocation == "" {
		return nil, httpapi.Invalid("metadata-location is required")
	}
	f, err := s.readRegistered(in, *in.Body.MetadataLocation)
	if err != nil {
		return nil, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return nil, err
	}
	if tb, taken := st.TableIn(r.path(), r.name); taken && in.Body.Overwrite && isTable(tb) {
		return overwriteCommand(in.Stamp, tb, f), nil
	}
	if err := checkNameFree(st, r); err != nil {
		return nil, err
	}
	return registerCommand(in.Stamp, r, f)
}

// readRegistered reads the metadata file to register (400 if it cannot
// be read or parsed).
func (s *Server) readRegistered(in *httpapi.In[registerBody], loc string) (*metadataFile, error) {
	norm, err := storage.Normalize(loc)
	if err != nil {
		return nil, httpapi.Invalid("Invalid metadata-location: %v", err)
	}
	if _, err := s.objects(); err != nil {
		return nil, err
	}
	f, err := s.readMetadata(in.Request().Context(), norm)
	if err != nil {
		return nil, httpapi.Invalid("Cannot register %s: %v", httpapi.Clip(loc), err)
	}
	return f, nil
}

func registerCommand(stamp fsm.Stamp, r ref, f *metadataFile) (fsm.Command, error) {
	loc, err := storage.Normalize(f.meta.Location())
	if err != nil {
		return nil, httpapi.Invalid("The metadata's table location is invalid: %v", err)
	}
	loc = strings.TrimRight(loc, "/")
	tt := fsm.TableExternal
	if strings.Contains(loc, "/__unitystorage/") {
		tt = fsm.TableManaged
	}
	return &fsm.CreateIcebergTable{Stamp: stamp, ID: f.meta.TableUUID().String(), Namespace: r.path(), Name: r.name,
		TableType: tt, Location: loc, MetadataLocation: f.location, Properties: f.meta.Properties()}, nil
}

// overwriteCommand swaps an existing table's pointer to the registered
// file, in the one entry commits use.
func overwriteCommand(stamp fsm.Stamp, tb *fsm.Table, f *metadataFile) fsm.Command {
	props := maps.Clone(map[string]string(f.meta.Properties()))
	return &fsm.CommitIcebergTables{Stamp: stamp, Tables: []fsm.IcebergCommit{{Namespace: tb.NamespacePath(), Name: tb.Name,
		BaseMetadataLocation: tb.Iceberg.MetadataLocation, MetadataLocation: f.location, Properties: &props,
		Location: strings.TrimRight(f.meta.Location(), "/")}}}
}
