// Package sharing serves Delta Sharing over the catalog's Delta tables:
// the open protocol recipients read with (Prefix: shares, schemas,
// tables, version, metadata, query and changes, NDJSON), the files it
// hands out under signed URLs (FilesPath), and the Unity Catalog REST
// routes a provider manages shares, recipients and grants with
// (ManagePrefix and friends).
//
// # State
//
// Shares, recipients, their tokens (as hashes only) and the key that
// signs file URLs, page tokens and refresh tokens are replicated state
// (fsm share.go, recipient.go, sharing_key.go). Every protocol request
// is served by the leader from linearizable state, so a revoked grant or
// an expired token is refused at once whichever node the recipient
// talks to. A file URL is verified by whichever node it reaches, with
// the key from that node's state.
//
// # Reading tables
//
// A query reads the table's Delta log through the object store
// (package deltalog): JSON commits, classic and v2 checkpoints, and for
// a catalog-managed table the commits the catalog ratified but writers
// have not published yet, read from _delta_log/_staged_commits/.
// Snapshots are cached per (location, version) with a byte bound;
// the latest version is re-resolved on every request.
package sharing

import (
	"context"
	"log/slog"
	"time"

	"github.com/raftcat/raftcat/deltalog"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

// Paths of the protocol and of its management routes.
const (
	// Prefix is the Delta Sharing endpoint recipients' profiles name.
	Prefix = "/delta-sharing"
	// FilesPath serves files of tables whose storage cannot sign URLs
	// itself (file://), below Prefix.
	FilesPath = "/files"
	// ucPrefix is UC REST, where shares and recipients are managed.
	ucPrefix = "/api/2.1/unity-catalog"
	// ActivationPath is where a recipient downloads its profile, once.
	ActivationPath = ucPrefix + "/public/data_sharing_activation"
)

// ObjectStore is what sharing needs of table storage: listing and
// reading the Delta log, ranged reads of the files it serves itself,
// and signed URLs where the storage can make them. storage.Blobs is one.
type ObjectStore interface {
	deltalog.Store
	Stat(ctx context.Context, loc string) (storage.ObjectInfo, error)
	ReadRange(ctx context.Context, loc string, off, n int64) ([]byte, error)
	SignedURL(ctx context.Context, loc string, expiry time.Duration) (string, error)
}

// Config configures Delta Sharing.
type Config struct {
	// Objects reads the shared tables (nil: queries answer 503).
	Objects ObjectStore
	// Endpoint is the public URL of the protocol that profiles name and
	// that self-served file URLs start with, e.g.
	// https://catalog.example.com/delta-sharing (empty: the scheme and
	// host the request arrived with, plus Prefix).
	Endpoint string
	// URLTTL is how long a file URL stays valid (0: one hour).
	URLTTL time.Duration
	// TokenLifetime is the default lifetime of a recipient's token
	// (0: tokens do not expire unless the request sets expiration_time).
	TokenLifetime time.Duration
	// CacheBytes bounds the snapshot cache (0: 256 MiB).
	CacheBytes int64
}

// Server serves Delta Sharing on a core.
type Server struct {
	core  *httpapi.Server
	cfg   Config
	cache *deltalog.Cache
	log   *slog.Logger
}

// Register mounts the protocol, the file route and the management
// routes on the core.
func Register(core *httpapi.Server, cfg Config) *Server {
	if cfg.URLTTL <= 0 {
		cfg.URLTTL = time.Hour
	}
	s := &Server{core: core, cfg: cfg, cache: deltalog.NewCache(cfg.CacheBytes), log: core.Logger().With("protocol", "delta-sharing")}
	s.mountProtocol()
	s.mountManagement()
	return s
}

// CacheStats reports the snapshot cache.
func (s *Server) CacheStats() (entries int, bytes int64, hits, misses uint64) { return s.cache.Stats() }
