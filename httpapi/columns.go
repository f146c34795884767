package httpapi

import (
	"context"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
)

// ColumnSource returns the columns of a table of one format whose schema
// the catalog's state does not hold (an Iceberg table's is in its
// metadata file), as a Delta struct type, so that UC REST shows them as
// it shows a Delta table's.
type ColumnSource func(ctx context.Context, t *fsm.Table) (*deltaschema.Struct, error)

// AddColumnSource registers the column source of a table format.
func (s *Server) AddColumnSource(format string, f ColumnSource) {
	if s.columnSources == nil {
		s.columnSources = map[string]ColumnSource{}
	}
	s.columnSources[format] = f
}

// ColumnSource returns the column source of a table format.
func (s *Server) ColumnSource(format string) (ColumnSource, bool) {
	f, ok := s.columnSources[format]
	return f, ok
}
