package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/raftcat/raftcat/internal/logging"
)

// These tests need PostgreSQL's server binaries (Debian's postgresql
// package, which CI installs): without them they fail.

// postgresDir is a directory for startPostgres that the postgres user can
// reach when the test runs as root (t.TempDir's parents are private).
func postgresDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "raftcat-bench-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "postgres")
}

var startedLine = regexp.MustCompile(`starting PostgreSQL \S+ \(.*\) from \S+ in (\S+) as cluster_name (\S+)-<server>`)

// leftBehind lists the processes of the run whose log is out (its
// directory on their command line, or its cluster_name in their title),
// and says whether its directory still exists.
func leftBehind(t *testing.T, out string) []string {
	t.Helper()
	m := startedLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no PostgreSQL start logged:\n%s", out)
	}
	dir, tag := m[1], m[2]
	var left []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		if strings.Contains(cmdline, dir) || strings.Contains(cmdline, tag) {
			left = append(left, e.Name()+": "+cmdline)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		left = append(left, "directory "+dir+" ("+errString(err)+")")
	}
	return left
}

func errString(err error) string {
	if err == nil {
		return "exists"
	}
	return err.Error()
}

// syncBuffer is a log several goroutines may write.
type syncBuffer = logging.Capture

// startTestPostgres starts PostgreSQL as cfg says, with its log.
func startTestPostgres(t *testing.T, cfg Config) (*postgresSystem, *syncBuffer) {
	t.Helper()
	if err := findPostgres(&cfg); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	s, err := startPostgres(context.Background(), cfg, postgresDir(t), log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return s, log
}

// TestPostgresCommitsVerifiesAndCleansUp starts a primary with two
// synchronous replicas, has writers race for two tables, verifies the
// result (and that verification notices a commit that was not made), and
// stops it: no process and no directory may remain.
func TestPostgresCommitsVerifiesAndCleansUp(t *testing.T) {
	ctx := context.Background()
	s, log := startTestPostgres(t, Config{Clients: 4, PostgresReplicas: 2})
	closed := false
	defer func() {
		if !closed {
			s.close()
		}
	}()
	if got := s.name(); got != "postgres (primary + 2 sync replicas, ANY 1)" {
		t.Errorf("name %q", got)
	}
	if !strings.Contains(log.String(), "r1: streaming quorum, r2: streaming quorum") ||
		!strings.Contains(log.String(), "synchronous_standby_names 'ANY 1 (r1, r2)', synchronous_commit on") {
		t.Errorf("replication not reported as set up:\n%s", log.String())
	}
	writers, err := s.prepare(ctx, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	const each = 25
	errs := make(chan error, len(writers))
	for _, w := range writers {
		go func() {
			for range each {
				if _, err := w.commit(ctx); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range writers {
		if n := len(w.requests().attempts.took); n < each || len(w.requests().loads.took) != n {
			t.Errorf("%d loads and %d attempts timed for %d commits", len(w.requests().loads.took), n, each)
		}
	}
	var total int64
	if err := s.admin.QueryRow(ctx, "SELECT sum(version) FROM tables").Scan(&total); err != nil || total != each*int64(len(writers)) {
		t.Fatalf("tables' versions add up to %d (%v), want %d", total, err, each*len(writers))
	}
	// Three postmasters and their children.
	if pids := s.pids(); len(pids) <= 3 {
		t.Errorf("pids %v: want the postmasters and their children", pids)
	}
	if err := s.verify(ctx, inFlight{}); err != nil {
		t.Fatal(err)
	}
	s.acked[1].Add(1)
	if err := s.verify(ctx, inFlight{}); err == nil || !strings.Contains(err.Error(), "table 1") {
		t.Fatalf("verify with a commit too many acknowledged: %v", err)
	}
	s.acked[1].Add(-1)
	if _, err := s.admin.Exec(ctx, "DELETE FROM commits WHERE table_id = 0 AND version = 1"); err != nil {
		t.Fatal(err)
	}
	if err := s.verify(ctx, inFlight{}); err == nil || !strings.Contains(err.Error(), "commit records") {
		t.Fatalf("verify with a commit record missing: %v", err)
	}
	s.close()
	closed = true
	if left := leftBehind(t, log.String()); len(left) > 0 {
		t.Fatalf("left after close:\n%s", strings.Join(left, "\n"))
	}
}

// cancelOn cancels a context once a line containing at has been written.
type cancelOn struct {
	syncBuffer
	at     string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.syncBuffer.Write(p)
	if strings.Contains(c.String(), c.at) {
		c.cancel()
	}
	return n, err
}

// TestPostgresCancelledWhileStartingLeavesNothing cancels the start (as
// Ctrl-C does) once the primary runs and the first replica has started:
// everything started so far must be stopped and removed.
func TestPostgresCancelledWhileStartingLeavesNothing(t *testing.T) {
	cfg := Config{Clients: 2, PostgresReplicas: 2}
	if err := findPostgres(&cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &cancelOn{at: "bench: postgres r1: pid", cancel: cancel}
	s, err := startPostgres(ctx, cfg, postgresDir(t), log)
	if err == nil {
		s.close()
		t.Fatalf("started although cancelled:\n%s", log.String())
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "bench: postgres r1: pid") {
		t.Fatalf("the first replica never started: %v\n%s", err, log.String())
	}
	if left := leftBehind(t, log.String()); len(left) > 0 {
		t.Fatalf("left after a cancelled start:\n%s", strings.Join(left, "\n"))
	}
}

// TestPostgresLonePrimary runs without replicas: no synchronous standbys
// are asked for.
func TestPostgresLonePrimary(t *testing.T) {
	ctx := context.Background()
	s, log := startTestPostgres(t, Config{Clients: 1})
	defer s.close()
	if got := s.name(); got != "postgres (lone primary)" {
		t.Errorf("name %q", got)
	}
	if len(s.servers) != 1 || !strings.Contains(log.String(), "synchronous_standby_names '', synchronous_commit on") {
		t.Errorf("%d servers:\n%s", len(s.servers), log.String())
	}
	writers, err := s.prepare(ctx, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if conflicts, err := writers[0].commit(ctx); err != nil || conflicts != 0 {
			t.Fatalf("commit: %d conflicts, %v", conflicts, err)
		}
	}
	if err := s.verify(ctx, inFlight{}); err != nil {
		t.Fatal(err)
	}
}

// TestFindPostgresSaysWhatToInstall gives a directory without PostgreSQL.
func TestFindPostgresSaysWhatToInstall(t *testing.T) {
	cfg := Config{PostgresBinDir: t.TempDir()}
	err := findPostgres(&cfg)
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("error %v", err)
	}
}

// TestSearchableNamesTheClosedDirectory: run as root, PostgreSQL runs as
// postgres, who must pass through every directory down to its own.
func TestSearchableNamesTheClosedDirectory(t *testing.T) {
	closed := filepath.Join(t.TempDir(), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(closed, &st); err != nil {
		t.Fatal(err)
	}
	other := int(st.Uid) + 12345
	if err := searchable(closed, other, other); err == nil || !strings.Contains(err.Error(), closed+" has mode 700") {
		t.Fatalf("error %v, want one naming %s", err, closed)
	}
	if err := searchable(closed, int(st.Uid), int(st.Gid)); err != nil {
		t.Fatalf("owner: %v", err)
	}
}
