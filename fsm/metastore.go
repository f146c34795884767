package fsm

// Metastore is the cluster-wide identity fixed at first bootstrap.
type Metastore struct {
	ID          string `json:"id"`
	StorageRoot string `json:"storage_root"` // managed storage when neither catalog nor schema sets one
	CreatedAt   int64  `json:"created_at"`
}

// Names of what a new cluster holds, as Unity Catalog OSS ships.
const (
	DefaultCatalog = "unity"
	DefaultSchema  = "default"
)

// CmdInit is the command type of Init.
const CmdInit CommandType = 1

// RecordMetastore is the record kind of the metastore (at most one).
const RecordMetastore byte = 1

func init() {
	registerCommand(CmdInit, applyInit)
	registerRecord(RecordMetastore, recordSpec{
		write: func(s *State, emit func(any) error) error {
			if s.meta == nil {
				return nil
			}
			return emit(s.meta)
		},
		decode: func(layout uint16, payload []byte) (any, error) { return decodeJSON[Metastore](layout, payload) },
		put:    func(b *Builder, v any) { b.t.meta = v.(*Metastore) },
	})
}

// Init seeds a new cluster: the metastore identity, catalog "unity" and
// schema "default". It is a no-op once the state is initialised.
type Init struct {
	Stamp
	MetastoreID string `json:"metastore_id"`
	StorageRoot string `json:"storage_root"`
	CatalogID   string `json:"catalog_id"`
	SchemaID    string `json:"schema_id"`
}

func (*Init) Type() CommandType { return CmdInit }

func applyInit(t *tx, _ uint64, c *Init) Result {
	if t.meta != nil {
		return Result{NoOp: true}
	}
	t.meta = &Metastore{ID: c.MetastoreID, StorageRoot: c.StorageRoot, CreatedAt: c.Time}
	cat := &Catalog{ID: c.CatalogID, Name: DefaultCatalog, Comment: "Main catalog",
		CreatedAt: c.Time, UpdatedAt: c.Time, CreatedBy: c.Caller, Owner: c.Caller}
	t.putCatalog(cat)
	t.putSchema(&Schema{ID: c.SchemaID, CatalogName: DefaultCatalog, Name: DefaultSchema,
		Comment: "Default schema", CreatedAt: c.Time, UpdatedAt: c.Time, CreatedBy: c.Caller, Owner: c.Caller})
	return Result{Catalog: cat}
}
