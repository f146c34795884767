package fsm

import "fmt"

var commandNames = map[CommandType]string{
	CmdInit: "Init", CmdCreateCatalog: "CreateCatalog", CmdUpdateCatalog: "UpdateCatalog",
	CmdDeleteCatalog: "DeleteCatalog", CmdCreateSchema: "CreateSchema", CmdUpdateSchema: "UpdateSchema",
	CmdDeleteSchema: "DeleteSchema", CmdCreateStagingTable: "CreateStagingTable", CmdCreateTable: "CreateTable",
	CmdUpdateTable: "UpdateTable", CmdDeleteTable: "DeleteTable", CmdRenameTable: "RenameTable",
}

// String names a command type, for logs and operators.
func (t CommandType) String() string {
	if s, ok := commandNames[t]; ok {
		return s
	}
	return fmt.Sprintf("unknown(%d)", uint8(t))
}
