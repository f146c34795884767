package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/raftcat/raftcat/bench"
)

// benchCmd measures the commit path: `raftcat bench [flags]`, Delta
// Sharing queries with `--protocol sharing`, the Lance Namespace commit
// path with `--protocol lance`, `raftcat bench series [flags]` for the
// commit measurement at a series of client counts, or `raftcat bench
// scale [flags]` for the many-tables measurements.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "scale" {
		return runBenchScale(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "series" {
		return runBenchSeries(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("raftcat bench", flag.ContinueOnError)
	o := defineBenchFlags(fs)
	cfg := &o.cfg
	fs.IntVar(&cfg.Tables, "tables", 16, "tables the clients commit to (client i writes table i mod tables)")
	fs.IntVar(&cfg.Clients, "clients", 32, "concurrent clients, each committing sequentially (with --protocol sharing: querying; 8 unless given)")
	single := fs.Bool("single", false, "one sequential client on one table (same as --clients 1 --tables 1; with --protocol lance, --clients 1 --lance-tables 1)")
	fs.StringVar(&cfg.Protocol, "protocol", "delta", "delta; iceberg: also run the Iceberg REST commit workload on the same cluster, alternating rounds with the Delta one, and report the iceberg/delta ratios (with --against-postgres: run it through iceberg-go against raftcat's REST catalog and iceberg-go's SQL catalog on PostgreSQL instead); sharing: measure Delta Sharing query latency on a generated table instead of commits; lance: measure the Lance Namespace commit path (version/create and batch-commit) instead")
	var sh bench.SharingConfig
	fs.IntVar(&sh.Tables, "sharing-tables", 8, "with --protocol sharing: identical copies of the table shared, each queried once cold")
	fs.IntVar(&sh.Commits, "sharing-commits", 100, "with --protocol sharing: commits after version 0 in the generated table")
	fs.IntVar(&sh.FilesPerCommit, "sharing-files-per-commit", 100, "with --protocol sharing: files each commit adds")
	fs.IntVar(&sh.Partitions, "sharing-partitions", 100, "with --protocol sharing: values of the partition column part (file i has part i mod this)")
	fs.IntVar(&sh.MaxFiles, "sharing-max-files", 1000, "with --protocol sharing: page size (maxFiles) of the paged query kind (0: not measured)")
	var ln bench.LanceConfig
	fs.IntVar(&ln.Tables, "lance-tables", 16, "with --protocol lance: tables the version/create clients commit to (client i writes table i mod this), and groups of --lance-batch tables the batch-commit clients commit to alike")
	fs.IntVar(&ln.Batch, "lance-batch", 10, "with --protocol lance: tables in each batch-commit (one create_table_version each)")
	fs.IntVar(&sh.Iterations, "iterations", 0, "with --protocol sharing: measure this many queries of each cached kind instead of --duration")
	out := fs.String("out", "bench.json", "where to write the machine-readable result")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the bench process itself (its writers, not the nodes; see --serve-flags=--pprof for those) to this file, for go tool pprof")
	help := usageText("Usage: raftcat bench [flags]\n       raftcat bench series [flags]\n       raftcat bench scale [flags]\n\n" +
		"Drives the Delta API commit workload: each client loads its table, then commits the next\n" +
		"version with add-commit asserting the table uuid (reporting the previous version as\n" +
		"published); on 409 it reloads and retries. Without --urls it starts a three-node cluster of\n" +
		"this binary on loopback with the flags scripts/local-cluster.sh uses. Reports commits/s,\n" +
		"conflicts/s, p50/p90/p99/p99.9 commit latency (load to acknowledged commit, retries\n" +
		"included) and errors, and writes them to --out as JSON.\n\n" +
		"With --protocol iceberg the same cluster also runs the Iceberg REST commit path, in rounds\n" +
		"alternating with the Delta one: each client loads its Iceberg table, then commits an append\n" +
		"(a new snapshot made the main branch, expiring the loaded snapshot's parent) asserting the\n" +
		"loaded snapshot with assert-ref-snapshot-id; on 409 it reloads and retries. Both results\n" +
		"are reported, with Iceberg's throughput and latencies over Delta's.\n\n" +
		"With --against-postgres it also runs the commit loop the way Unity Catalog OSS, Apache\n" +
		"Polaris and Lakekeeper commit in PostgreSQL: load the table's version with a SELECT, then\n" +
		"in one transaction UPDATE tables SET version = base+1 WHERE id = $1 AND version = base and\n" +
		"INSERT the commit record; no row updated is the conflict (roll back, reload, retry). It\n" +
		"runs initdb under --dir, starts a primary (fsync and synchronous_commit on) on loopback\n" +
		"and --postgres-replicas streaming replicas r1, r2... made with pg_basebackup, sets\n" +
		"synchronous_standby_names = 'ANY 1 (r1, r2)' and checks in pg_stat_replication that each\n" +
		"replica streams as a synchronous candidate before measuring; every client talks to the\n" +
		"primary. Run as root, PostgreSQL runs as the user postgres, who must be able to pass\n" +
		"through a --dir given. Its processes and directory are removed when the bench ends,\n" +
		"fails or is stopped (Ctrl-C, SIGTERM).\n\n" +
		"With --protocol iceberg --against-postgres both sides run the Iceberg workload through\n" +
		"iceberg-go, and Delta does not run: each client loads its table, writes a new one-row\n" +
		"Parquet data file into the table's data directory, appends it with AddDataFiles (iceberg-go\n" +
		"writes a manifest and a manifest list) asserting that main still points at the loaded\n" +
		"snapshot, and commits; on a lost race it reloads and redoes the append. raftcat is driven\n" +
		"through iceberg-go's REST catalog client (client i on node i mod 3, with --token and the\n" +
		"cluster's CA when set); the anchor is iceberg-go's SQL catalog (postgres dialect) on the\n" +
		"PostgreSQL above, its warehouse file://<--dir>/iceberg-sql-warehouse, beside raftcat's.\n" +
		"Rounds alternate; it reports both sides' commits/s, p50/p99 and server CPU per commit with\n" +
		"raftcat's over the SQL catalog's, overall and by round, and checks afterwards that every\n" +
		"acknowledged snapshot is in its table's history on both sides. raftcat fsyncs each metadata\n" +
		"file; iceberg-go's local file writer, which the SQL catalog writes through, does not. With\n" +
		"--urls the cluster's warehouse must be a file:// path this machine can write.\n\n" +
		"With --protocol sharing it measures Delta Sharing queries instead: it writes a Delta log of\n" +
		"--sharing-commits commits of --sharing-files-per-commit files (10,000 by default; no data\n" +
		"files) under --dir, registers --sharing-tables identical copies as external tables, shares\n" +
		"them with a recipient through UC REST and queries them as the Python client does (POST\n" +
		".../query, responseformat=parquet), spread over the nodes. It reports the latency of the\n" +
		"first query of each copy (cold), of repeated queries of one copy (cached: one client, then\n" +
		"--clients concurrent ones, with queries/s), of a jsonPredicateHints query on one partition\n" +
		"and of a read in pages of --sharing-max-files, checking every answer's file count.\n\n" +
		"With --protocol lance it measures the Lance Namespace commit path (/lance) instead, on\n" +
		"tables bench$lance$t<N> declared in a file:// warehouse under --dir (with --urls the nodes\n" +
		"must read --dir at the same path). Per commit a client writes a staging manifest in its\n" +
		"table's _versions/ directory and asks for version/create of the next version (V2 naming);\n" +
		"on 409 it re-reads the latest version and retries. Client i commits to table i mod\n" +
		"--lance-tables; then, in a window of its own, to group i mod --lance-tables of\n" +
		"--lance-batch other tables, one version of each in one batch-commit request. The two\n" +
		"windows alternate over --rounds. It reports commits/s and batches/s (and table\n" +
		"versions/s), conflicts, p50/p90/p99 latency and errors, checks every table's latest\n" +
		"version against the versions acknowledged, and writes them to --out as JSON.\n\n" +
		"With --auth token the started cluster runs with authentication on (--auth=token) and every\n" +
		"request carries its admin token; --token gives the token of a --urls cluster. With\n" +
		"--against-auth-off the bench also starts a cluster without authentication and alternates\n" +
		"rounds between the two, reporting auth-on over auth-off throughput and latencies; with\n" +
		"--secure it compares a cluster with TLS, mutual TLS and encrypted gossip to one without.\n\n" +
		"--client and --balance run raftcat's writers as users run theirs: --client nethttp uses one\n" +
		"net/http client with a pooled keep-alive transport shared by the writers and encoding/json\n" +
		"for Delta bodies (default lean: each writer's own connection, bodies by hand); --balance\n" +
		"request sends each request to the next node, as an L7 balancer does (default client: each\n" +
		"writer keeps to one node). Every result also says where a commit's cost went: the bench\n" +
		"process's own CPU per commit, requests per commit, requests followers relayed to the leader\n" +
		"per commit (their raftcat_forwarded_requests_total, read at each window's start and end)\n" +
		"and retries per commit. --against-lean also runs the lean client, one node per writer, on the\n" +
		"same cluster in alternating rounds and reports the ratios.\n\n" +
		"'raftcat bench series --help' describes the growth series from 1 to 128 clients, and\n" +
		"'raftcat bench scale --help' the million-table measurements.\n\n")
	if code, ok := parseFlags(fs, args, stdout, stderr, help); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 0, "", stderr); !ok {
		return code
	}
	if *single {
		cfg.Clients, cfg.Tables = 1, 1
	}
	if code, ok := o.resolve(fs, stderr); !ok {
		return code
	}
	// Ctrl-C or SIGTERM cancels the run; the bench then stops the processes
	// it started and removes what it would have removed at its end.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuProfile != "" {
		done, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "raftcat bench:", err)
			return 1
		}
		defer done()
	}
	if cfg.Protocol == "sharing" {
		sh.URLs, sh.Bin, sh.Dir, sh.ServeFlags, sh.Leader = cfg.URLs, cfg.Bin, cfg.Dir, cfg.ServeFlags, cfg.Leader
		sh.Auth, sh.Token = cfg.Auth, cfg.Token
		sh.Clients, sh.Duration, sh.Warmup = cfg.Clients, cfg.Duration, cfg.Warmup
		if !o.set["clients"] && !*single {
			sh.Clients = 8
		}
		rep, err := bench.RunSharing(ctx, sh, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "raftcat bench:", err)
			return 1
		}
		return writeBenchResult(rep, rep.Text(), *out, stdout, stderr)
	}
	if cfg.Protocol == "lance" {
		ln.URLs, ln.Bin, ln.Dir, ln.ServeFlags, ln.Leader = cfg.URLs, cfg.Bin, cfg.Dir, cfg.ServeFlags, cfg.Leader
		ln.Auth, ln.Token = cfg.Auth, cfg.Token
		ln.Clients, ln.Duration, ln.Warmup, ln.Rounds = cfg.Clients, cfg.Duration, cfg.Warmup, cfg.Rounds
		if *single {
			ln.Tables = 1
		}
		rep, err := bench.RunLance(ctx, ln, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "raftcat bench:", err)
			return 1
		}
		return writeBenchResult(rep, rep.Text(), *out, stdout, stderr)
	}
	rep, err := bench.Run(ctx, *cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat bench:", err)
		return 1
	}
	return writeBenchResult(rep, rep.Text(), *out, stdout, stderr)
}

// startCPUProfile profiles this process into path until done is called.
func startCPUProfile(path string) (done func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// benchAuthError says what is wrong with the authentication flags, if
// anything.
func benchAuthError(cfg bench.Config, urls bool) string {
	switch {
	case cfg.Auth != "none" && cfg.Auth != bench.AuthToken:
		return "--auth is none or token"
	case cfg.AgainstAuthOff && cfg.Auth != bench.AuthToken:
		return "--against-auth-off compares a cluster with --auth token against one without; it does not go with --auth none"
	case cfg.AgainstAuthOff && urls:
		return "--against-auth-off starts both clusters itself; it does not go with --urls"
	case cfg.AgainstAuthOff && cfg.Protocol != "delta":
		return "--against-auth-off runs the Delta workload; it does not go with --protocol " + cfg.Protocol
	case cfg.Secure && cfg.AgainstAuthOff:
		return "--secure compares TLS on and off; run --against-auth-off apart"
	case cfg.Secure && (cfg.Auth != bench.AuthToken || urls || (cfg.Protocol != "delta" && !(cfg.Protocol == "iceberg" && cfg.AgainstPostgres))):
		return "--secure starts the clusters itself, with --auth token, and runs the Delta workload or --protocol iceberg --against-postgres: not with --auth none, --urls or --protocol " + cfg.Protocol + " alone"
	}
	return ""
}

// benchClientError says what is wrong with --client and --balance, if
// anything.
func benchClientError(cfg bench.Config, set map[string]bool) string {
	switch {
	case cfg.Client != bench.ClientLean && cfg.Client != bench.ClientNetHTTP:
		return "--client is lean or nethttp"
	case cfg.Balance != bench.BalanceClient && cfg.Balance != bench.BalanceRequest:
		return "--balance is client or request"
	case (set["client"] || set["balance"]) && cfg.Protocol != "delta" && cfg.Protocol != "iceberg":
		return "--client and --balance choose how the commit workload's writers talk to raftcat; they do not go with --protocol " + cfg.Protocol
	case cfg.Balance == bench.BalanceRequest && cfg.Leader:
		return "--balance request spreads each request over the nodes; --target leader sends every request to one"
	case cfg.AgainstLean && cfg.Client == bench.ClientLean && cfg.Balance == bench.BalanceClient:
		return "--against-lean compares another client or balancing with the lean client: give --client nethttp or --balance request"
	case cfg.AgainstLean && cfg.Protocol != "delta":
		return "--against-lean runs the Delta workload; it does not go with --protocol " + cfg.Protocol
	}
	return ""
}

// writeBenchResult writes a report as JSON to out and prints its text.
func writeBenchResult(rep any, text, out string, stdout, stderr io.Writer) int {
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(stderr, "raftcat bench:", err)
		return 1
	}
	fmt.Fprint(stdout, text)
	fmt.Fprintf(stdout, "result written to %s\n", out)
	return 0
}
