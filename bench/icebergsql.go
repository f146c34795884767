package bench

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	goiceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the SQL catalog
)

// This file compares raftcat's Iceberg REST catalog with iceberg-go's SQL
// catalog on PostgreSQL, the client doing the same work on both sides:
// iceberg-go loads the table, the writer writes a small Parquet data file,
// iceberg-go appends it (writing a manifest and a manifest list) and
// commits asserting that main still points at the loaded snapshot. Through
// the REST catalog raftcat checks the requirement, writes the new metadata
// file and moves the pointer; with the SQL catalog the client writes the
// metadata file and compare-and-swaps the pointer in the catalog's row.

// icebergSchema is the bench tables' schema: one long column.
var icebergSchema = goiceberg.NewSchema(0,
	goiceberg.NestedField{ID: 1, Name: "id", Type: goiceberg.PrimitiveTypes.Int64, Required: true})

// icebergGoTables are the tables of one side and their writers.
type icebergGoTables struct {
	// creators is how many tables are created at once (0: 16). The SQL
	// catalog creates each in a serializable transaction that concurrent
	// creations make fail (SQLSTATE 40001) more often than it retries.
	creators int
	idents   []table.Identifier
	acked    tableCounts
	writers  []*icebergGoWriter
}

// create makes the namespace (if missing) and the tables through cat, and
// a writer per client, client i writing table i mod tables through
// catFor(i).
func (ts *icebergGoTables) create(ctx context.Context, cat catalog.Catalog, tables, clients int, catFor func(i int) (catalog.Catalog, error)) error {
	err := cat.CreateNamespace(ctx, table.Identifier{icebergNamespace}, nil)
	if err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace %s: %w", icebergNamespace, err)
	}
	run := fmt.Sprintf("bench_%d", time.Now().UnixNano()%1e12)
	ts.idents = make([]table.Identifier, tables)
	err = createEach(ctx, tables, cmp.Or(ts.creators, 16), func(i int) error {
		ts.idents[i] = table.Identifier{icebergNamespace, fmt.Sprintf("%s_%d", run, i)}
		if _, err := cat.CreateTable(ctx, ts.idents[i], icebergSchema); err != nil {
			return fmt.Errorf("create table %v: %w", ts.idents[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	data, err := parquetFile()
	if err != nil {
		return err
	}
	ts.acked = make(tableCounts, tables)
	for i := range clients {
		c, err := catFor(i)
		if err != nil {
			return err
		}
		ts.writers = append(ts.writers, &icebergGoWriter{cat: c, ident: ts.idents[i%tables], id: i, data: data,
			acked: &ts.acked[i%tables]})
	}
	return nil
}

func (ts *icebergGoTables) committers() []committer {
	out := make([]committer, len(ts.writers))
	for i, w := range ts.writers {
		out[i] = w
	}
	return out
}

// verify loads every table through cat: each snapshot a writer had
// acknowledged must be among its snapshots and in its snapshot log, and
// the table may hold no more snapshots than were acknowledged plus those f
// leaves in flight.
func (ts *icebergGoTables) verify(ctx context.Context, cat catalog.Catalog, f inFlight) error {
	acked := make([]map[int64]bool, len(ts.idents))
	for t := range acked {
		acked[t] = map[int64]bool{}
	}
	for _, w := range ts.writers {
		t := w.id % len(ts.idents)
		for _, id := range w.snapshots {
			acked[t][id] = true
		}
	}
	return ts.acked.check(func(t int) (int64, error) {
		tbl, err := cat.LoadTable(ctx, ts.idents[t])
		if err != nil {
			return 0, fmt.Errorf("load %v: %w", ts.idents[t], err)
		}
		return snapshotsHeld(tbl.Metadata(), acked[t], ts.idents[t])
	}, f)
}

// snapshotsHeld checks that every acknowledged snapshot is in md's
// snapshots and snapshot log, and returns how many snapshots md holds.
func snapshotsHeld(md table.Metadata, acked map[int64]bool, ident table.Identifier) (int64, error) {
	snaps, logged := map[int64]bool{}, map[int64]bool{}
	for _, s := range md.Snapshots() {
		snaps[s.SnapshotID] = true
	}
	for e := range md.SnapshotLogs() {
		logged[e.SnapshotID] = true
	}
	for id := range acked {
		if !snaps[id] || !logged[id] {
			return 0, fmt.Errorf("table %v: acknowledged snapshot %d is not in its history (in snapshots: %v, in the snapshot log: %v)",
				ident, id, snaps[id], logged[id])
		}
	}
	return int64(len(snaps)), nil
}

// parquetFile is a Parquet file of one row of the bench tables' schema
// (its column carrying the field id), the data file every commit adds
// under a path of its own.
func parquetFile() ([]byte, error) {
	md := arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: md}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(1)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 1)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// icebergGoWriter is one Iceberg writer using iceberg-go, as a streaming
// writer commits at each checkpoint: load the table, write a data file,
// append it (iceberg-go writes a manifest of the one file and a manifest
// list) asserting that main still points at the loaded snapshot, and
// commit; a lost race (see lostRace) reloads and redoes the append.
// iceberg-go's own commit retries stay off (commit.retry.num-retries 0),
// so each conflict is the writer's.
type icebergGoWriter struct {
	cat       catalog.Catalog
	ident     table.Identifier
	id        int
	seq       int
	data      []byte // the Parquet data file's bytes
	acked     *atomic.Int64
	snapshots []int64 // the snapshots this writer had acknowledged
	times     requestTimes
}

func (w *icebergGoWriter) requests() *requestTimes { return &w.times }

// closeConn closes a REST catalog's idle connections (the SQL catalog's
// pool is its system's).
func (w *icebergGoWriter) closeConn() {
	if c, ok := w.cat.(*rest.Catalog); ok {
		_ = c.Close()
	}
}

func (w *icebergGoWriter) commit(ctx context.Context) (int, error) {
	conflicts := 0
	for {
		start := time.Now()
		tbl, err := w.cat.LoadTable(ctx, w.ident)
		w.times.loads.since(start)
		if err != nil {
			return conflicts, fmt.Errorf("load: %w", err)
		}
		start = time.Now()
		// An append once begun is finished, also when the window ends: a
		// cancelled commit would leave its outcome unknown.
		id, err := w.append(context.WithoutCancel(ctx), tbl)
		w.times.attempts.since(start)
		switch {
		case err == nil:
			w.acked.Add(1)
			w.snapshots = append(w.snapshots, id)
			return conflicts, nil
		case lostRace(err):
			conflicts++ // another writer moved main: reload and redo
		default:
			return conflicts, fmt.Errorf("commit: %w", err)
		}
	}
}

// lostRace says whether a commit failed because another writer moved
// main first, having changed nothing: iceberg-go's table.ErrCommitFailed
// (the REST catalog answered 409, or the SQL catalog's compare-and-swap
// updated no row), or a requirement the SQL catalog found failed when it
// checked the commit against the pointer it reloaded, before writing
// anything (iceberg-go v0.7.0 returns that check's error as it is, not as
// ErrCommitFailed).
func lostRace(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || strings.HasPrefix(err.Error(), "requirement failed: ")
}

// append writes a new data file into the table's data directory, appends
// it on the loaded snapshot and commits; it returns the new snapshot.
func (w *icebergGoWriter) append(ctx context.Context, tbl *table.Table) (int64, error) {
	w.seq++
	path := fmt.Sprintf("%s/data/w%d-%d.parquet", strings.TrimSuffix(tbl.Location(), "/"), w.id, w.seq)
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return 0, fmt.Errorf("the file IO of %s cannot write", tbl.Location())
	}
	if err := wfs.WriteFile(path, w.data); err != nil {
		return 0, err
	}
	b, err := goiceberg.NewDataFileBuilder(tbl.Spec(), goiceberg.EntryContentData, path, goiceberg.ParquetFile,
		nil, nil, nil, 1, int64(len(w.data)))
	if err != nil {
		return 0, err
	}
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return 0, err
	}
	// Each data file is new (its path is this writer's next), so the
	// duplicate check, which reads every manifest of the loaded snapshot
	// and grows with the table, is left out, as streaming writers' appends
	// (Java's AppendFiles) leave it out; the name mapping stays out so
	// every commit is the same append.
	err = tx.AddDataFiles(ctx, []goiceberg.DataFile{b.Build()}, nil, table.WithoutDuplicateCheck(), table.WithoutAutoNameMapping())
	if err != nil {
		return 0, err
	}
	committed, err := tx.Commit(ctx)
	if err != nil {
		return 0, err
	}
	s := committed.CurrentSnapshot()
	if s == nil {
		return 0, errors.New("committed, but the table has no current snapshot")
	}
	return s.SnapshotID, nil
}

// icebergRESTSystem drives raftcat's Iceberg REST catalog through
// iceberg-go's REST catalog client, client i on node i mod nodes (or every
// client on the leader with --target leader).
type icebergRESTSystem struct {
	rc     *raftcatSystem
	admin  *rest.Catalog
	tables icebergGoTables
}

func (s *icebergRESTSystem) name() string { return "raftcat (iceberg-go REST)" }

func (s *icebergRESTSystem) pids() []int { return s.rc.pids() }

func (s *icebergRESTSystem) close() {
	if s.admin != nil {
		_ = s.admin.Close()
	}
	s.rc.close()
}

// catalogOn is an iceberg-go REST catalog client of the node at base,
// with the cluster's token and the TLS configuration that trusts it.
func (s *icebergRESTSystem) catalogOn(ctx context.Context, base string) (*rest.Catalog, error) {
	opts := []rest.Option{rest.WithWarehouseLocation("unity")}
	if s.rc.token != "" {
		opts = append(opts, rest.WithOAuthToken(string(s.rc.token)))
	}
	if s.rc.tls != nil {
		opts = append(opts, rest.WithTLSConfig(s.rc.tls))
	}
	c, err := rest.NewCatalog(ctx, "raftcat", base+icebergBase, opts...)
	if err != nil {
		return nil, fmt.Errorf("iceberg-go REST catalog on %s: %w", base, err)
	}
	return c, nil
}

func (s *icebergRESTSystem) prepare(ctx context.Context, tables, clients int) ([]committer, error) {
	targets, err := s.rc.targets(ctx)
	if err != nil {
		return nil, err
	}
	if s.admin, err = s.catalogOn(ctx, targets[0]); err != nil {
		return nil, err
	}
	err = s.tables.create(ctx, s.admin, tables, clients, func(i int) (catalog.Catalog, error) {
		return s.catalogOn(ctx, targets[i%len(targets)])
	})
	if err != nil {
		return nil, err
	}
	return s.tables.committers(), nil
}

func (s *icebergRESTSystem) verify(ctx context.Context, f inFlight) error {
	return s.tables.verify(ctx, s.admin, f)
}

// icebergSQLSystem is iceberg-go's SQL catalog (postgres dialect, through
// database/sql and pgx) on the PostgreSQL primary and synchronous replicas
// the bench starts, its warehouse a file:// directory beside raftcat's.
// The catalog keeps a table's metadata pointer in a row of
// iceberg_tables; a commit loads the row and the metadata file, checks the
// requirements, writes the new metadata file and updates the row where it
// still holds the loaded pointer (no row updated is the conflict).
type icebergSQLSystem struct {
	pg        *postgresSystem
	warehouse string // file:// URL
	db        *sql.DB
	cat       *sqlcat.Catalog
	clients   int
	tables    icebergGoTables
}

func (s *icebergSQLSystem) name() string {
	return "sql-catalog (iceberg-go, postgres " + s.pg.setup() + ")"
}

func (s *icebergSQLSystem) close() {
	if s.cat != nil {
		_ = s.cat.Close()
	}
	if s.db != nil {
		_ = s.db.Close()
	}
	s.pg.close()
}

func (s *icebergSQLSystem) prepare(ctx context.Context, tables, clients int) ([]committer, error) {
	db, err := sql.Open("pgx", s.pg.servers[0].connString("raftcat-bench-iceberg"))
	if err != nil {
		return nil, err
	}
	s.db, s.clients = db, clients
	// A connection per client, kept for the whole run (a commit's load and
	// its update run one after the other on it).
	db.SetMaxOpenConns(clients)
	db.SetMaxIdleConns(clients)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	s.tables.creators = 1
	s.cat, err = sqlcat.NewCatalog("raftcat_bench", db, sqlcat.Postgres, goiceberg.Properties{
		"warehouse": s.warehouse, sqlcat.SchemaVersionKey: sqlcat.SchemaVersionV1})
	if err != nil {
		return nil, fmt.Errorf("iceberg-go SQL catalog: %w", err)
	}
	err = s.tables.create(ctx, s.cat, tables, clients, func(int) (catalog.Catalog, error) { return s.cat, nil })
	if err != nil {
		return nil, err
	}
	return s.tables.committers(), s.fill(ctx)
}

// fill opens the pool's connections, so that the backends serving the
// next window exist when pids lists them.
func (s *icebergSQLSystem) fill(ctx context.Context) error {
	conns := make([]*sql.Conn, 0, s.clients)
	defer func() {
		for _, c := range conns {
			_ = c.Close() // back to the pool
		}
	}()
	for range s.clients {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// pids are the PostgreSQL servers and their children, backends included.
func (s *icebergSQLSystem) pids() []int {
	if s.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = s.fill(ctx)
		cancel()
	}
	return s.pg.pids()
}

// verify checks every table's history through the catalog, that the
// replicas still streamed as synchronous candidates at the end and that
// each replica, once it has replayed the primary's WAL, holds the same
// metadata pointers.
func (s *icebergSQLSystem) verify(ctx context.Context, f inFlight) error {
	if err := s.tables.verify(ctx, s.cat, f); err != nil {
		return err
	}
	if s.pg.replicas == 0 {
		return nil
	}
	ok, state, err := s.pg.syncState(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("after the run the replicas are not all synchronous candidates: %s", state)
	}
	primary, err := metadataPointers(ctx, s.pg.admin)
	if err != nil {
		return err
	}
	return s.pg.eachReplayedReplica(ctx, func(conn *pgx.Conn, name string) error {
		got, err := metadataPointers(ctx, conn)
		if err != nil {
			return err
		}
		if !maps.Equal(got, primary) {
			return fmt.Errorf("holds other metadata pointers than the primary (%d tables, the primary %d)", len(got), len(primary))
		}
		return nil
	})
}

// metadataPointers reads every table's metadata pointer from the SQL
// catalog's table.
func metadataPointers(ctx context.Context, conn *pgx.Conn) (map[string]string, error) {
	rows, err := conn.Query(ctx, "SELECT table_namespace || '.' || table_name, metadata_location FROM iceberg_tables")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var name, loc string
	_, err = pgx.ForEachRow(rows, []any{&name, &loc}, func() error {
		out[name] = loc
		return nil
	})
	return out, err
}
