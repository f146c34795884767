package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/raftcat/raftcat/internal/localcluster"
)

// postgresSystem is PostgreSQL as Unity Catalog OSS, Apache Polaris and
// Lakekeeper keep a catalog: a table's version is a column of its row, and a
// commit is a compare-and-swap on that row (UPDATE ... WHERE version =
// base; no row updated is the conflict) with the commit record inserted in
// the same transaction. It runs a primary with fsync and synchronous_commit
// on and, unless there are none, streaming replicas of which any one must
// have flushed a commit before it is acknowledged (synchronous_standby_names
// = 'ANY 1 (r1, r2)'): a catalog that survives the loss of one machine, as
// raftcat's three nodes and etcd's three members do. Every client talks to
// the primary, where a PostgreSQL-backed catalog sends its writes.
type postgresSystem struct {
	binDir   string
	dir      string // the system's own directory, removed by close
	created  bool   // dir was made here (and so is removed)
	replicas int
	version  string // of the server, e.g. "15.18"
	tag      string // this run's servers' cluster_name prefix
	cred     *syscall.Credential
	servers  []*pgServer // the primary first
	admin    *pgx.Conn   // to the primary, for setup and verify
	pool     *pgxpool.Pool
	clients  int
	acked    tableCounts
	log      io.Writer
}

// pgServer is one postmaster.
type pgServer struct {
	name string // primary, r1, r2...
	data string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed once the postmaster has exited and been reaped
	logf string
}

// findPostgres resolves the directory of PostgreSQL's server binaries
// before anything is started: --postgres-bin-dir, or the newest
// /usr/lib/postgresql/<version>/bin (Debian's postgresql package), or the
// directory of an initdb on PATH.
func findPostgres(cfg *Config) error {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_basebackup", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if cfg.PostgresBinDir != "" {
		if !has(cfg.PostgresBinDir) {
			return fmt.Errorf("--against-postgres: %s does not hold initdb, pg_basebackup and postgres (Debian: apt-get install postgresql; they are in /usr/lib/postgresql/<version>/bin)", cfg.PostgresBinDir)
		}
		return nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return cmp.Compare(version(b), version(a)) })
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if has(d) {
			cfg.PostgresBinDir = d
			return nil
		}
	}
	return errors.New("--against-postgres needs PostgreSQL's server binaries (Debian: apt-get install postgresql); none in /usr/lib/postgresql/*/bin or on PATH (or give --postgres-bin-dir)")
}

// startPostgres makes and starts the primary and its replicas in dir,
// which it creates and close removes, and waits until every replica
// streams as a synchronous candidate. On error it leaves nothing behind.
func startPostgres(ctx context.Context, cfg Config, dir string, log io.Writer) (_ *postgresSystem, err error) {
	if cfg.PostgresReplicas < 0 {
		return nil, errors.New("--postgres-replicas must be 0 or more")
	}
	s := &postgresSystem{binDir: cfg.PostgresBinDir, dir: dir, replicas: cfg.PostgresReplicas, log: log}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	out, err := exec.CommandContext(ctx, filepath.Join(s.binDir, "postgres"), "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s/postgres --version: %w", s.binDir, err)
	}
	if f := strings.Fields(string(out)); len(f) >= 3 {
		s.version = f[2] // postgres (PostgreSQL) 15.18 (Debian ...)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the bench runs PostgreSQL as the user postgres, which Debian's postgresql package creates: %w", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s exists (left by an earlier run?); remove it first", dir)
		}
		return nil, err
	}
	s.created = true
	if s.cred != nil {
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		if err := searchable(filepath.Dir(dir), uid, gid); err != nil {
			return nil, err
		}
	}
	sock := filepath.Join(dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chown(sock, uid, gid); err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(1 + s.replicas)
	if err != nil {
		return nil, err
	}
	// The servers' processes are titled "postgres: <tag>-<server>: ...",
	// distinct from any other run's.
	s.tag = fmt.Sprintf("raftcat-bench-%08x", rand.Uint32())
	fmt.Fprintf(log, "bench: starting PostgreSQL %s (%s) from %s in %s as cluster_name %s-<server>\n",
		s.version, s.setup(), s.binDir, dir, s.tag)

	primary := &pgServer{name: "primary", data: filepath.Join(dir, "primary"), port: ports[0]}
	// --no-sync: initdb's files need not survive a crash of this machine;
	// the servers run with fsync on.
	if err := s.run(ctx, "initdb", "initdb", "-D", primary.data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return nil, err
	}
	if err := s.start(primary, cfg.Clients); err != nil {
		return nil, err
	}
	if s.admin, err = s.connect(ctx, primary, "raftcat-bench-admin"); err != nil {
		return nil, err
	}
	var names []string
	for i := 1; i <= s.replicas; i++ {
		r := &pgServer{name: fmt.Sprintf("r%d", i), data: filepath.Join(dir, fmt.Sprintf("r%d", i)), port: ports[i]}
		// -R writes standby.signal and primary_conninfo (with the
		// application_name the primary knows the replica by); -C -S keeps
		// the WAL the replica has yet to receive in a slot of its own;
		// --no-sync as for initdb.
		conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", primary.port, r.name)
		if err := s.run(ctx, "pg_basebackup-"+r.name, "pg_basebackup", "-D", r.data, "-d", conninfo,
			"-R", "-X", "stream", "-C", "-S", r.name, "-c", "fast", "--no-sync"); err != nil {
			return nil, err
		}
		if err := s.start(r, cfg.Clients); err != nil {
			return nil, err
		}
		c, err := s.connect(ctx, r, "raftcat-bench-admin")
		if err != nil {
			return nil, err
		}
		c.Close(ctx)
		names = append(names, r.name)
	}
	if s.replicas > 0 {
		// Set on the primary once the replicas exist: before, a commit
		// would wait for them.
		if _, err := s.admin.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (%s)'", strings.Join(names, ", "))); err != nil {
			return nil, err
		}
		if _, err := s.admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return nil, err
		}
		if err := s.waitSync(ctx, time.Minute); err != nil {
			return nil, err
		}
	}
	var ssn, sc string
	if err := s.admin.QueryRow(ctx, "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')").Scan(&ssn, &sc); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "bench: postgres: synchronous_standby_names '%s', synchronous_commit %s\n", ssn, sc)
	return s, nil
}

// setup says how the servers replicate.
func (s *postgresSystem) setup() string {
	switch s.replicas {
	case 0:
		return "lone primary"
	case 1:
		return "primary + 1 sync replica, ANY 1"
	}
	return fmt.Sprintf("primary + %d sync replicas, ANY 1", s.replicas)
}

// searchable checks that the user uid (group gid) may pass through dir and
// every directory above it.
func searchable(dir string, uid, gid int) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		m := st.Mode().Perm()
		if ok && !(m&0o001 != 0 || int(sys.Uid) == uid && m&0o100 != 0 || int(sys.Gid) == gid && m&0o010 != 0) {
			return fmt.Errorf("PostgreSQL runs as the user postgres (the bench runs as root), who cannot reach %s: %s has mode %o; give a --dir every user can pass through (one under /tmp, say)", dir, d, m)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// env is the environment of every PostgreSQL program: none of the
// caller's PG* variables.
func (s *postgresSystem) env() []string {
	return []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC", "HOME=" + s.dir}
}

// attr puts a PostgreSQL program in a process group of its own (so that a
// terminal's Ctrl-C reaches only the bench, which then stops it, and so that
// initdb or pg_basebackup can be killed with their children; a postmaster's
// children run in sessions of their own and quit when it tells them or when
// it dies), as the postgres user when the bench runs as root, and kills it
// should the bench die without stopping it.
func (s *postgresSystem) attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: s.cred, Pdeathsig: syscall.SIGKILL}
}

// run runs one of PostgreSQL's tools to its end, its output in
// <logName>.log; on an error it returns the log's end.
func (s *postgresSystem) run(ctx context.Context, logName, prog string, args ...string) error {
	logPath := filepath.Join(s.dir, logName+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, prog), args...)
	cmd.Stdout, cmd.Stderr, cmd.Env, cmd.SysProcAttr = logf, logf, s.env(), s.attr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: %v\n%s", prog, err, logTail(logPath))
	}
	return nil
}

// start starts a postmaster (connect waits for it to accept connections).
func (s *postgresSystem) start(p *pgServer, clients int) error {
	p.logf = filepath.Join(s.dir, p.name+".log")
	logf, err := os.Create(p.logf)
	if err != nil {
		return err
	}
	defer logf.Close() // the postmaster has its own descriptor
	set := func(k string, v any) []string { return []string{"-c", fmt.Sprintf("%s=%v", k, v)} }
	args := []string{"-D", p.data}
	// The same settings for every server (a standby needs at least its
	// primary's max_connections and max_wal_senders):
	//   - fsync and synchronous_commit on: a commit is acknowledged once its
	//     WAL is flushed on the primary and, with replicas, on a synchronous
	//     standby (synchronous_standby_names is set on the primary later);
	//   - shared_buffers 256MB, ample for the two small tables;
	//   - max_connections the clients plus 10 (setup, verification, the
	//     reserved superuser slots);
	//   - wal_level replica, a WAL sender and a replication slot per replica
	//     plus spares (pg_basebackup streams through one), hot_standby on so
	//     that the replicas answer the final check.
	for _, kv := range [][]string{
		set("listen_addresses", "127.0.0.1"), set("port", p.port),
		set("unix_socket_directories", filepath.Join(s.dir, "sock")),
		set("cluster_name", s.tag+"-"+p.name),
		set("fsync", "on"), set("synchronous_commit", "on"), set("full_page_writes", "on"),
		set("shared_buffers", "256MB"), set("max_connections", clients+10),
		set("wal_level", "replica"), set("max_wal_senders", 10+s.replicas),
		set("max_replication_slots", 10+s.replicas), set("hot_standby", "on"),
		set("logging_collector", "off"),
	} {
		args = append(args, kv...)
	}
	cmd := exec.Command(filepath.Join(s.binDir, "postgres"), args...)
	cmd.Stdout, cmd.Stderr, cmd.Env, cmd.SysProcAttr = logf, logf, s.env(), s.attr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(p.done) }()
	s.servers = append(s.servers, p)
	fmt.Fprintf(s.log, "bench: postgres %s: pid %d, 127.0.0.1:%d\n", p.name, cmd.Process.Pid, p.port)
	return nil
}

func (p *pgServer) connString(app string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable application_name=%s", p.port, app)
}

// connect waits up to a minute for p to accept a connection.
func (s *postgresSystem) connect(ctx context.Context, p *pgServer, app string) (*pgx.Conn, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(c, p.connString(app))
		cancel()
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("postgres %s accepted no connection within a minute: %v\n%s", p.name, err, logTail(p.logf))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.done:
			return nil, fmt.Errorf("postgres %s exited: %v\n%s", p.name, p.cmd.ProcessState, logTail(p.logf))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// syncState says which replicas stream as synchronous candidates, per
// pg_stat_replication on the primary; ok when all of them do.
func (s *postgresSystem) syncState(ctx context.Context) (ok bool, state string, err error) {
	rows, err := s.admin.Query(ctx, "SELECT application_name, state, coalesce(sync_state, '') FROM pg_stat_replication ORDER BY application_name")
	if err != nil {
		return false, "", err
	}
	seen := map[string]string{}
	for rows.Next() {
		var app, st, sync string
		if err := rows.Scan(&app, &st, &sync); err != nil {
			return false, "", err
		}
		seen[app] = st + " " + sync
	}
	if err := rows.Err(); err != nil {
		return false, "", err
	}
	ok = true
	var parts []string
	for i := 1; i <= s.replicas; i++ {
		name := fmt.Sprintf("r%d", i)
		st, found := seen[name]
		if !found {
			st = "missing"
		}
		ok = ok && st == "streaming quorum"
		parts = append(parts, name+": "+st)
	}
	return ok, strings.Join(parts, ", "), nil
}

// waitSync waits until every replica streams with sync_state quorum.
func (s *postgresSystem) waitSync(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		ok, state, err := s.syncState(ctx)
		if err != nil {
			return err
		}
		if ok {
			fmt.Fprintf(s.log, "bench: postgres: pg_stat_replication on the primary: %s\n", state)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres: the replicas are not all streaming as synchronous candidates (sync_state quorum) after %s; pg_stat_replication on the primary: %s", wait, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *postgresSystem) name() string { return "postgres (" + s.setup() + ")" }

func (s *postgresSystem) prepare(ctx context.Context, tables, clients int) ([]committer, error) {
	for _, q := range []string{
		"CREATE TABLE tables (id int PRIMARY KEY, version bigint NOT NULL)",
		"CREATE TABLE commits (table_id int NOT NULL, version bigint NOT NULL, record jsonb NOT NULL, PRIMARY KEY (table_id, version))",
	} {
		if _, err := s.admin.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	if _, err := s.admin.Exec(ctx, "INSERT INTO tables (id, version) SELECT g, 0 FROM generate_series(0, $1::int - 1) g", tables); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(s.servers[0].connString("raftcat-bench"))
	if err != nil {
		return nil, err
	}
	// A connection per client, kept for the whole run.
	pc.MaxConns, pc.MinConns = int32(clients), 0
	pc.MaxConnLifetime, pc.MaxConnIdleTime = 24*time.Hour, 24*time.Hour
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, err
	}
	s.clients = clients
	if err := s.fill(ctx); err != nil {
		return nil, err
	}
	s.acked = make(tableCounts, tables)
	out := make([]committer, clients)
	for i := range out {
		out[i] = &pgWriter{pool: s.pool, table: i % tables, id: i, acked: &s.acked[i%tables]}
	}
	return out, nil
}

// fill opens the pool's connections (a window's end closes those whose
// request it cancelled), so that the backends serving the next window
// exist when pids lists them.
func (s *postgresSystem) fill(ctx context.Context) error {
	conns := make([]*pgxpool.Conn, 0, s.clients)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range s.clients {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// pids are the postmasters and their children (backends, WAL senders and
// receivers, the startup process replaying WAL, the writers): PostgreSQL
// works in many processes, and CPU accounting reads each one.
func (s *postgresSystem) pids() []int {
	if s.pool != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = s.fill(ctx)
		cancel()
	}
	parents := map[int]bool{}
	var out []int
	for _, p := range s.servers {
		parents[p.cmd.Process.Pid] = true
		out = append(out, p.cmd.Process.Pid)
	}
	return append(out, childPids(parents)...)
}

// childPids are the processes whose parent is one of parents, from /proc.
func childPids(parents map[int]bool) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parents[parentPid(pid)] {
			out = append(out, pid)
		}
	}
	return out
}

// parentPid reads a process's parent from /proc (0 if it cannot).
func parentPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// verify checks every table's version against the commits acknowledged,
// that each table has exactly one commit record per version (the update
// and the insert committed together), that the replicas still streamed as
// synchronous candidates at the end, and that each replica, once it has
// replayed the primary's WAL, holds the same versions.
func (s *postgresSystem) verify(ctx context.Context, f inFlight) error {
	if err := s.settled(ctx); err != nil {
		return err
	}
	versions := map[int]int64{}
	err := s.acked.check(func(t int) (int64, error) {
		var v, n, lo, hi int64
		if err := s.admin.QueryRow(ctx, "SELECT version FROM tables WHERE id = $1", t).Scan(&v); err != nil {
			return 0, fmt.Errorf("read version of table %d: %w", t, err)
		}
		if err := s.admin.QueryRow(ctx, "SELECT count(*), coalesce(min(version), 0), coalesce(max(version), 0) FROM commits WHERE table_id = $1", t).Scan(&n, &lo, &hi); err != nil {
			return 0, err
		}
		if n != v || v > 0 && (lo != 1 || hi != v) {
			return 0, fmt.Errorf("table %d is at version %d with %d commit records (versions %d to %d)", t, v, n, lo, hi)
		}
		versions[t] = v
		return v, nil
	}, f)
	if err != nil || s.replicas == 0 {
		return err
	}
	ok, state, err := s.syncState(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("after the run the replicas are not all synchronous candidates: %s", state)
	}
	return s.eachReplayedReplica(ctx, func(conn *pgx.Conn, _ string) error {
		return checkReplicaVersions(ctx, conn, versions)
	})
}

// settled waits, up to a minute, until no writer's session on the primary
// is busy. A writer whose window ended while its COMMIT was on the way
// gave up on it, but the server may still carry it out: read before it
// had, the primary's versions would trail the replicas' that had it.
func (s *postgresSystem) settled(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var busy int
		if err := s.admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'raftcat-bench' AND state <> 'idle'").Scan(&busy); err != nil {
			return err
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d writer sessions on the primary still busy a minute after the run", busy)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// eachReplayedReplica runs check on a connection to each replica once it
// has replayed the primary's WAL as far as the primary has written it now.
func (s *postgresSystem) eachReplayedReplica(ctx context.Context, check func(conn *pgx.Conn, name string) error) error {
	var lsn string
	if err := s.admin.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return err
	}
	for _, r := range s.servers[1:] {
		if err := s.replayed(ctx, r, lsn, check); err != nil {
			return fmt.Errorf("replica %s: %w", r.name, err)
		}
	}
	return nil
}

// replayed connects to replica r, waits up to a minute for it to replay
// the WAL up to lsn and runs check.
func (s *postgresSystem) replayed(ctx context.Context, r *pgServer, lsn string, check func(conn *pgx.Conn, name string) error) error {
	conn, err := s.connect(ctx, r, "raftcat-bench-verify")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(time.Minute)
	for {
		var replayed bool
		if err := conn.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&replayed); err != nil {
			return err
		}
		if replayed {
			return check(conn, r.name)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("has not replayed the primary's WAL up to %s within a minute", lsn)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkReplicaVersions compares a replica's table versions with the
// primary's.
func checkReplicaVersions(ctx context.Context, conn *pgx.Conn, versions map[int]int64) error {
	for t, want := range versions {
		var v int64
		if err := conn.QueryRow(ctx, "SELECT version FROM tables WHERE id = $1", t).Scan(&v); err != nil {
			return err
		}
		if v != want {
			return fmt.Errorf("table %d is at version %d, on the primary at %d", t, v, want)
		}
	}
	return nil
}

// close disconnects, stops every postmaster with an immediate shutdown
// (SIGQUIT: it quits its children and waits for them to exit; if it has not
// gone within 10 s, SIGKILL to it and to each of its children, which run in
// sessions of their own) and removes the directory.
func (s *postgresSystem) close() {
	if s.pool != nil {
		s.pool.Close()
	}
	if s.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.admin.Close(ctx)
		cancel()
	}
	for _, p := range s.servers {
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	}
	for _, p := range s.servers {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			pid := p.cmd.Process.Pid
			for _, child := range childPids(map[int]bool{pid: true}) {
				_ = syscall.Kill(child, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			<-p.done
		}
	}
	s.servers = nil
	if s.created {
		_ = os.RemoveAll(s.dir)
		s.created = false
	}
}

// logTail is the end of a log file, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// pgWriter commits as a PostgreSQL-backed catalog does: load the table's
// version, then in one transaction the conditional update and the commit
// record's insert; no row updated is the conflict, and the writer rolls
// back, reloads and retries.
type pgWriter struct {
	pool  *pgxpool.Pool
	table int
	id    int
	seq   int
	acked *atomic.Int64
	times requestTimes
}

func (w *pgWriter) requests() *requestTimes { return &w.times }

func (w *pgWriter) commit(ctx context.Context) (int, error) {
	conflicts := 0
	for {
		start := time.Now()
		var v int64
		err := w.pool.QueryRow(ctx, "SELECT version FROM tables WHERE id = $1", w.table).Scan(&v)
		w.times.loads.since(start)
		if err != nil {
			return conflicts, fmt.Errorf("load: %v", err)
		}
		w.seq++
		now := time.Now().UnixMilli()
		record := fmt.Sprintf(`{"version":%d,"timestamp":%d,"file-name":"%020d.w%d-%d.json","file-size":1024,"file-modification-timestamp":%d}`,
			v+1, now, v+1, w.id, w.seq, now)
		start = time.Now()
		won, err := w.attempt(ctx, v, record)
		w.times.attempts.since(start)
		if err != nil {
			return conflicts, fmt.Errorf("commit: %v", err)
		}
		if won {
			w.acked.Add(1)
			return conflicts, nil
		}
		conflicts++
	}
}

// attempt commits version base+1 if the table is still at base.
func (w *pgWriter) attempt(ctx context.Context, base int64, record string) (bool, error) {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // nothing once committed
	tag, err := tx.Exec(ctx, "UPDATE tables SET version = $3 WHERE id = $1 AND version = $2", w.table, base, base+1)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		return false, tx.Rollback(ctx)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO commits (table_id, version, record) VALUES ($1, $2, $3)", w.table, base+1, record); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}
