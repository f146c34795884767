// Package iceberg serves the Apache Iceberg REST catalog protocol under
// Prefix: config, namespaces, tables and their commits, credentials and
// metrics. The {prefix} path segment of every route is the catalog (the
// Iceberg warehouse); an Iceberg namespace [a, b, ...] of warehouse W is
// the fsm namespace [W, a, b, ...], whose first level is a UC schema.
//
// # Metadata lives in files, the pointer in raft
//
// An Iceberg table's metadata (schemas, specs, every snapshot, the
// metadata log) lives in immutable metadata files,
// <location>/metadata/<NNNNN>-<uuid>.metadata.json, written create-only
// before anything is proposed. The replicated state holds only the
// pointer to the current file (fsm.IcebergState). A table's metadata
// grows with every snapshot; kept in raft it would be copied into every
// log entry that changes the table and into every snapshot of the state,
// so entries stay small and only the pointer is replicated. Loads read
// the file the pointer names through a cache keyed by location: files are
// never rewritten, so a cached entry never goes stale, and the cache is
// bounded in bytes.
//
// # The commit algorithm
//
// A commit (single table, or a transaction over several) runs on the
// leader: read the linearizable state; resolve every table (404s); read
// each table's current metadata; validate the requirements against it
// (409 CommitFailedException); apply the updates with iceberg-go's
// metadata builder (400 for invalid updates, 409 for a stale sequence
// number). Tables whose updates change nothing keep their metadata and
// get no new file. For every other table a new metadata file is written
// create-only, then ONE fsm.CommitIcebergTables entry moves every changed
// pointer from the base read to the file written, all or nothing. A lost
// race (another commit moved a pointer first) fails the whole entry with
// CodeRequirementConflict: the answer is 409 CommitFailedException and
// the new files are deleted (best effort). When the outcome is unknown
// (leadership changed after proposing) the answer is 500
// CommitStateUnknownException and the files are kept, since the entry may
// yet apply. A staged create (stage-create) persists nothing; the commit
// with assert-create that finishes it builds the metadata from its
// updates and proposes fsm.CreateIcebergTable.
//
// ETags are derived from the replicated pointer (etag.go), so every node
// answers the same tag, and a 304 is decided before storage is read.
//
// # Access
//
// Every route names what its caller needs (rules.go), checked by the core
// before the handler runs; lists show only what the caller may see. The
// clients this protocol serves authenticate with OAuth2 client
// credentials, so it serves the token endpoint they call (oauth.go). A
// load, create or commit asked for vended credentials carries those of
// the table's location, to read or to read and write by the caller's
// privileges (credentials.go).
package iceberg

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

// Prefix is the path the Iceberg REST catalog is served under.
const Prefix = "/api/2.1/unity-catalog/iceberg"

// ObjectStore is what the catalog reads and writes in table storage: the
// metadata files, and the objects a purge deletes. storage.Blobs is one.
type ObjectStore interface {
	Read(ctx context.Context, loc string) ([]byte, error)
	Write(ctx context.Context, loc string, data []byte) error
	Delete(ctx context.Context, loc string) error
	List(ctx context.Context, prefix string) ([]storage.ObjectInfo, error)
}

// CredentialVendor hands out the credentials a client uses to reach a
// table location itself (storage.StaticCredentials is one).
type CredentialVendor interface {
	Vend(ctx context.Context, location, operation string) (storage.Credential, error)
}

// Config configures the Iceberg REST catalog.
type Config struct {
	// Objects holds the metadata files (nil: tables cannot be created,
	// loaded or committed; those requests answer 503).
	Objects ObjectStore
	// Credentials vend what clients get for a location (nil: nothing).
	Credentials CredentialVendor
	// CacheBytes bounds the metadata read cache (0: 64 MiB).
	CacheBytes int64
}

// Server serves the Iceberg REST catalog on a core.
type Server struct {
	core  *httpapi.Server
	cfg   Config
	cache *metadataCache
	locks tableLocks
	log   *slog.Logger
}

// route is one served endpoint: method, path below /v1/:prefix, what a
// caller needs (rules.go), handler.
type route struct {
	method, path string
	rule         httpapi.Rule
	handler      func(s *Server) echo.HandlerFunc
}

// routeSets are the route tables of the package's files (each adds its
// own in init), mounted and advertised in that order.
var routeSets [][]route

func addRoutes(rs ...route) { routeSets = append(routeSets, rs) }

// catalogPath is where every route but config lives.
const catalogPath = "/v1/:prefix"

// Register mounts the Iceberg REST catalog on the core. Every request
// goes to the leader (stale reads excepted).
func Register(core *httpapi.Server, cfg Config) *Server {
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 64 << 20
	}
	s := &Server{core: core, cfg: cfg, cache: newMetadataCache(cfg.CacheBytes), log: core.Logger().With("protocol", "iceberg")}
	g := core.Mount(httpapi.Group{Name: "iceberg", Prefix: Prefix, Errors: errorMapping{}, ToLeader: true, Relay: true})
	g.GET("/v1/config", httpapi.AnyCaller(), s.getConfig)
	g.POST(oauthPath, httpapi.Public(), s.issueToken)
	for _, rt := range allRoutes() {
		g.Add(rt.method, catalogPath+rt.path, rt.rule, rt.handler(s))
	}
	core.AddTxPlanner("iceberg", s.planTxOp)
	core.AddColumnSource(fsm.FormatIceberg, s.ucColumns)
	core.Stages("iceberg", commitStages...)
	return s
}

// The stages of an Iceberg commit on the leader, as
// raftcat_write_stage_seconds times them.
const (
	stageDecode       = "decode"       // requirements and updates from JSON
	stageReadBase     = "read base"    // the current metadata (cached, else read and parsed)
	stageRequirements = "requirements" // checked against the current metadata
	stageUpdate       = "update"       // iceberg-go applies the updates and builds the metadata
	stageEncode       = "encode"       // the new metadata to JSON
	stageWrite        = "file write"   // the metadata file written create-only and synced
	stageRender       = "render"       // the answer, after the entry applied
)

var commitStages = []string{stageDecode, stageReadBase, stageRequirements, stageUpdate, stageEncode, stageWrite, stageRender}

// stage times one stage of a commit.
func (s *Server) stage(name string) func() { return s.core.Stage("iceberg", name) }

func allRoutes() []route {
	var out []route
	for _, rs := range routeSets {
		out = append(out, rs...)
	}
	return out
}

// endpoints lists the served routes in the form config advertises them:
// "METHOD /v1/{prefix}/namespaces/{namespace}".
func endpoints() []string {
	out := []string{}
	for _, rt := range allRoutes() {
		segs := strings.Split(rt.path, "/")
		for i, sg := range segs {
			if name, ok := strings.CutPrefix(sg, ":"); ok {
				segs[i] = "{" + name + "}"
			}
		}
		out = append(out, rt.method+" /v1/{prefix}"+strings.Join(segs, "/"))
	}
	return out
}

func noContent(c echo.Context) error { return c.NoContent(http.StatusNoContent) }

// h adapts a handler method to the route table.
func h(f func(*Server, echo.Context) error) func(*Server) echo.HandlerFunc {
	return func(s *Server) echo.HandlerFunc { return func(c echo.Context) error { return f(s, c) } }
}
