package fsm

// ManagedRoot is where the managed tables of a schema live (the schema's
// managed location, else its catalog's, else the metastore root's), ""
// when the schema is missing or none is configured. Protocols that choose
// a managed table's location before proposing (Iceberg writes the first
// metadata file there) read it here.
func (s *State) ManagedRoot(catalog, schema string) string {
	c, ok := s.Catalog(catalog)
	sc, found := s.Schema(catalog, schema)
	if !ok || !found {
		return ""
	}
	return (&tx{meta: s.meta}).managedRoot(c, sc)
}
