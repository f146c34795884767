package fsm

// CmdCreateIcebergTable creates an Iceberg table.
const CmdCreateIcebergTable CommandType = 15

func init() { registerCommand(CmdCreateIcebergTable, applyCreateIcebergTable) }

// CreateIcebergTable creates an Iceberg table in a namespace (a schema or
// a namespace below one) whose initial metadata file the HTTP layer has
// written at MetadataLocation. ID is the metadata's table uuid.
//
// A staged create (stage-create) proposes nothing: the HTTP layer answers
// it from the metadata it computed, and the commit that finishes it
// (requirement assert-create) proposes this command, which fails with
// CodeTableExists when another create won the name meanwhile.
type CreateIcebergTable struct {
	Stamp
	ID        string   `json:"id"`
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
	// TableType is MANAGED (the default) or EXTERNAL; an external table may
	// not contain managed storage.
	TableType        string            `json:"table_type,omitempty"`
	Location         string            `json:"location"` // normalised
	MetadataLocation string            `json:"metadata_location"`
	Properties       map[string]string `json:"properties,omitempty"`
	Comment          *string           `json:"comment,omitempty"`
}

func (*CreateIcebergTable) Type() CommandType { return CmdCreateIcebergTable }

func (c *CreateIcebergTable) tableType() string {
	if c.TableType == "" {
		return TableManaged
	}
	return canonEnum(c.TableType)
}

// check refuses what no state could accept.
func (c *CreateIcebergTable) check() *Error {
	if err := tableRefError(c.Namespace, c.Name); err != nil {
		return err
	}
	if c.ID == "" || c.Location == "" || c.MetadataLocation == "" {
		return Invalidf("An Iceberg table needs a uuid, a location and a metadata location: %s", c.Name)
	}
	if tt := c.tableType(); tt != TableManaged && tt != TableExternal {
		return Invalidf("Unknown table type: %s", c.TableType)
	}
	return nil
}

func applyCreateIcebergTable(t *tx, index uint64, c *CreateIcebergTable) Result {
	if err := c.check(); err != nil {
		return failed(err)
	}
	if err := t.namespaceExists(c.Namespace); err != nil {
		return failed(err)
	}
	if err := t.nameFree(c.Rules, c.Namespace, c.Name, ""); err != nil {
		return failed(err)
	}
	if err := t.checkIcebergLocation(c); err != nil {
		return failed(err)
	}
	tb := &Table{ID: c.ID, Name: c.Name, Format: FormatIceberg, Type: c.tableType(), Location: c.Location,
		Comment: c.Comment, Properties: compactProperties(c.Properties, c.ID),
		Iceberg: &IcebergState{MetadataLocation: c.MetadataLocation},
		Owner:   c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time, MetaIndex: index}
	t.placeIn(tb, c.Namespace)
	t.putTable(tb)
	return Result{Table: tb}
}

func (t *tx) checkIcebergLocation(c *CreateIcebergTable) *Error {
	if c.tableType() == TableExternal {
		if err := t.checkOutsideManagedStorage(c.Location); err != nil {
			return err
		}
	}
	return t.checkNewLocation(c.Rules, c.Location, c.tableType())
}
