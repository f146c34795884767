package bench

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// iceberg-go's SQL catalog on a primary with two synchronous replicas:
// writers race for two tables, each commit a real append (a data file, a
// manifest and a manifest list); verification passes, notices an
// acknowledged snapshot that is not in its table's history and a commit
// too many, and the tables read back one row per commit. Needs
// PostgreSQL's server binaries, as the other PostgreSQL tests do.
func TestIcebergSQLCatalogCommitsAndVerifies(t *testing.T) {
	ctx := context.Background()
	pg, log := startTestPostgres(t, Config{Clients: 4, PostgresReplicas: 2})
	s := &icebergSQLSystem{pg: pg, warehouse: "file://" + t.TempDir()}
	closed := false
	defer func() {
		if !closed {
			s.close()
		}
	}()
	if got := s.name(); got != "sql-catalog (iceberg-go, postgres primary + 2 sync replicas, ANY 1)" {
		t.Errorf("name %q", got)
	}
	writers, err := s.prepare(ctx, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	const each = 5
	conflicts := commitConcurrently(t, writers, each)
	t.Logf("%d conflicts", conflicts)
	for _, w := range s.tables.writers {
		if len(w.snapshots) != each || len(w.times.attempts.took) < each || len(w.times.loads.took) != len(w.times.attempts.took) {
			t.Fatalf("writer %d: %d snapshots acknowledged, %d loads, %d attempts", w.id, len(w.snapshots), len(w.times.loads.took), len(w.times.attempts.took))
		}
	}
	if pids := s.pids(); len(pids) <= 3 {
		t.Errorf("pids %v: want the postmasters and their children", pids)
	}
	if err := s.verify(ctx, inFlight{}); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, s, 0)
	if rows != 2*each {
		t.Fatalf("table 0 holds %d rows, want one per commit (%d)", rows, 2*each)
	}
	w := s.tables.writers[1]
	w.snapshots = append(w.snapshots, 12345)
	if err := s.verify(ctx, inFlight{}); err == nil || !strings.Contains(err.Error(), "acknowledged snapshot 12345 is not in its history") {
		t.Fatalf("verify with a snapshot acknowledged that no table holds: %v", err)
	}
	w.snapshots = w.snapshots[:len(w.snapshots)-1]
	s.tables.acked[0].Add(1)
	if err := s.verify(ctx, inFlight{}); err == nil || !strings.Contains(err.Error(), "table 0") {
		t.Fatalf("verify with a commit too many acknowledged: %v", err)
	}
	s.tables.acked[0].Add(-1)
	s.close()
	closed = true
	if left := leftBehind(t, log.String()); len(left) > 0 {
		t.Fatalf("left after close:\n%s", strings.Join(left, "\n"))
	}
}

// commitConcurrently runs each writer for n commits at once and returns
// the conflicts they met.
func commitConcurrently(t *testing.T, writers []committer, n int) int {
	t.Helper()
	type outcome struct {
		conflicts int
		err       error
	}
	done := make(chan outcome, len(writers))
	for _, w := range writers {
		go func() {
			var o outcome
			for range n {
				c, err := w.commit(context.Background())
				o.conflicts += c
				if err != nil {
					o.err = err
					break
				}
			}
			done <- o
		}()
	}
	total := 0
	var errs []error
	for range writers {
		o := <-done
		total += o.conflicts
		errs = append(errs, o.err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return total
}

// readRows scans table t of the SQL catalog and counts its rows.
func readRows(t *testing.T, s *icebergSQLSystem, table int) int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := s.cat.LoadTable(ctx, s.tables.idents[table])
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	return at.NumRows()
}

// Run with --protocol iceberg --against-postgres, end to end at a tiny
// size: a started cluster with authentication on, driven through
// iceberg-go's REST catalog client, and iceberg-go's SQL catalog on a
// primary with two synchronous replicas, in alternating rounds, raftcat
// with authentication and transport security on. Both sides commit and
// verify; nothing of PostgreSQL remains. No timing is judged.
func TestRunIcebergAgainstSQLCatalog(t *testing.T) {
	dir := t.TempDir()
	bin := lanceBinary(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := &syncBuffer{}
	cfg := Config{Bin: bin, Dir: filepath.Dir(postgresDir(t)), Tables: 2, Clients: 4, Duration: time.Second,
		Warmup: 200 * time.Millisecond, Rounds: 2, Protocol: "iceberg", AgainstPostgres: true, PostgresReplicas: 2, Auth: AuthToken, Secure: true}
	rep, err := Run(ctx, cfg, log)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	for _, r := range []*Result{rep.Iceberg, rep.IcebergSQL} {
		// A client may lose every race in so short a run: no client's
		// count is judged, only the whole.
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 ||
			r.ClientCommitsMax <= 0 || r.ServerCPUSeconds <= 0 {
			t.Fatalf("implausible result %+v\n%s", r, log.String())
		}
	}
	if rep.Raftcat != nil || rep.Postgres != nil || rep.TLSOff != nil || rep.Iceberg.System != "raftcat (iceberg-go REST)" || rep.Auth != AuthToken ||
		!rep.Secure || !strings.Contains(log.String(), "TLS, mutual TLS between nodes and encrypted gossip") ||
		rep.PostgresVersion == "" || !strings.HasPrefix(rep.IcebergSQL.System, "sql-catalog (iceberg-go, postgres primary + 2") {
		t.Fatalf("report %+v", rep)
	}
	if rep.IcebergSQLThroughputRatio <= 0 || rep.IcebergSQLP99Ratio <= 0 || rep.IcebergSQLCPURatio <= 0 || len(rep.IcebergSQLRoundRatios) != 2 {
		t.Fatalf("ratios %v, %v, %v, by round %v", rep.IcebergSQLThroughputRatio, rep.IcebergSQLP99Ratio, rep.IcebergSQLCPURatio, rep.IcebergSQLRoundRatios)
	}
	if left := leftBehind(t, log.String()); len(left) > 0 {
		t.Fatalf("left after the run:\n%s", strings.Join(left, "\n"))
	}
}

func TestTextComparesIcebergWithSQLCatalog(t *testing.T) {
	rep := Report{Clients: 4, Tables: 2, Target: "spread", DurationS: 2, Rounds: 2, Protocol: "iceberg",
		Iceberg:                   &Result{System: "raftcat (iceberg-go REST)", CommitsPerSec: 60, Commits: 240, ClientCPUSeconds: 4.8},
		IcebergSQL:                &Result{System: "sql-catalog (iceberg-go, postgres lone primary)", CommitsPerSec: 50, Commits: 200, ClientCPUSeconds: 5},
		IcebergSQLThroughputRatio: 1.2, IcebergSQLP50Ratio: 0.5, IcebergSQLP99Ratio: 0.75, IcebergSQLCPURatio: 2,
		IcebergSQLRoundRatios: []float64{1.1, 1.3}}
	text := rep.Text()
	for _, want := range []string{
		"\nraftcat (iceberg-go REST)     60 commits/s",
		"\nsql-catalog (iceberg-go, postgres lone primary)     50 commits/s",
		"\nraftcat/sql-catalog (iceberg-go on both): throughput x1.20, p50 x0.50, p99 x0.75, server CPU per commit x2.00\n",
		"\nraftcat/sql-catalog throughput ratio by round: x1.10 x1.30\n",
		"\nclient (bench process) CPU per commit: raftcat side 20.00 ms, sql-catalog side 25.00 ms\n",
		"without fsync",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "iceberg/delta") || strings.Contains(text, "raftcat/postgres") {
		t.Errorf("comparisons not run printed:\n%s", text)
	}
}

// The SQL catalog creates each table in a serializable transaction; the
// bench's default 16 tables must all be created, however those
// transactions would collide.
func TestIcebergSQLCatalogCreatesSixteenTables(t *testing.T) {
	pg, _ := startTestPostgres(t, Config{Clients: 16})
	s := &icebergSQLSystem{pg: pg, warehouse: "file://" + t.TempDir()}
	defer s.close()
	writers, err := s.prepare(context.Background(), 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(writers) != 16 || len(s.tables.idents) != 16 {
		t.Fatalf("%d writers over %d tables", len(writers), len(s.tables.idents))
	}
}
