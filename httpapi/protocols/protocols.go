// Package protocols lists the HTTP protocols a raftcat node serves and
// mounts them on the httpapi core. A new protocol is a package of its own
// under httpapi and one line here.
package protocols

import (
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/admin"
	"github.com/raftcat/raftcat/httpapi/authapi"
	"github.com/raftcat/raftcat/httpapi/deltaapi"
	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/httpapi/sharing"
	"github.com/raftcat/raftcat/httpapi/transactions"
	"github.com/raftcat/raftcat/httpapi/ucrest"
	"github.com/raftcat/raftcat/httpapi/ui"
)

// Config configures the protocols.
type Config struct {
	Admin   admin.Config
	Delta   deltaapi.Config
	Iceberg iceberg.Config
	Sharing sharing.Config
	Lance   lance.Config
	UI      ui.Config
}

// Node is what the operational endpoints need of the node beyond the data
// path: the cluster operations of the admin endpoints, and what the
// status page shows.
type Node interface {
	admin.Operations
	ui.Source
}

// Mount registers every protocol on core and returns the admin endpoints
// (whose Leave takes the node out of the cluster).
func Mount(core *httpapi.Server, node Node, cfg Config) *admin.Server {
	adm := admin.Register(core, node, cfg.Admin)
	authapi.Register(core)
	ucrest.Register(core)
	deltaapi.Register(core, cfg.Delta)
	iceberg.Register(core, cfg.Iceberg)
	sharing.Register(core, cfg.Sharing)
	lance.Register(core, cfg.Lance)
	transactions.Register(core)
	ui.Register(core, node, cfg.UI)
	return adm
}
