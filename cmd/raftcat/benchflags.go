package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/raftcat/raftcat/bench"
)

// benchOptions are the flags of the commit measurement, which `raftcat
// bench` and `raftcat bench series` share, so that a point of the series
// is measured exactly as `raftcat bench` would measure it.
type benchOptions struct {
	cfg                                 bench.Config
	urls, caFile, target, serveFlagList *string
	set                                 map[string]bool // the flags given
}

// defineBenchFlags defines on fs the measurement flags both commands
// take; the client and table counts each defines itself.
func defineBenchFlags(fs *flag.FlagSet) *benchOptions {
	o := &benchOptions{}
	cfg := &o.cfg
	o.urls = fs.String("urls", "", "comma-separated HTTP URLs of an existing cluster (default: start three local nodes)")
	o.caFile = fs.String("ca-file", os.Getenv("RAFTCAT_CA_FILE"), "CA certificate(s) (PEM) of a --urls cluster serving HTTPS (default: the system's trusted CAs) [RAFTCAT_CA_FILE]")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured time (with --protocol sharing: of each cached query kind; with --protocol lance: of each kind per round)")
	fs.DurationVar(&cfg.Warmup, "warmup", 3*time.Second, "time run before measuring")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "measured windows of --duration per system (each after its warm-up); with --against-etcd or --against-postgres they alternate between the systems, so a machine whose speed drifts slows them alike")
	o.target = fs.String("target", "spread", "where requests go: spread (client i talks to node i mod nodes; followers relay to the leader) or leader (every request to the node passing GET /readyz?leader, as a load balancer with that check sends them)")
	fs.StringVar(&cfg.Client, "client", bench.ClientLean, "HTTP client of the raftcat writers (delta and iceberg): lean (each writer reads and writes its own kept-alive connection, bodies made and read by hand) or nethttp (one net/http client with a pooled keep-alive transport shared by the writers, as most Go services use; Delta bodies made and read with encoding/json)")
	fs.StringVar(&cfg.Balance, "balance", bench.BalanceClient, "how the raftcat writers' requests spread over the nodes: client (writer i keeps to node i mod nodes, as an L4 balancer keeps a connection on one node) or request (each request to the next node, round robin over the cluster, as an L7 balancer does)")
	fs.BoolVar(&cfg.AgainstLean, "against-lean", false, "what the client costs: also run the Delta workload on the same cluster with the lean client, each writer keeping to one node, alternating rounds with --client and --balance, and report the ratios (needs --client nethttp or --balance request)")
	fs.BoolVar(&cfg.AgainstEtcd, "against-etcd", false, "also run the equivalent compare-and-swap workload on a three-member etcd started from --etcd-bin, and report the ratios")
	fs.StringVar(&cfg.EtcdBin, "etcd-bin", "etcd", "etcd server binary for --against-etcd (Debian: apt-get install etcd-server)")
	fs.BoolVar(&cfg.AgainstPostgres, "against-postgres", false, "also run the workload as PostgreSQL-backed catalogs commit (a compare-and-swap UPDATE of the table's row plus the commit record's INSERT in one transaction) on a PostgreSQL primary with --postgres-replicas synchronous streaming replicas that it starts, and report the ratios; with --against-etcd too, rounds go round all three systems; with --protocol iceberg, run the Iceberg workload through iceberg-go on raftcat's REST catalog and on iceberg-go's SQL catalog (postgres dialect) on that PostgreSQL instead")
	fs.StringVar(&cfg.PostgresBinDir, "postgres-bin-dir", "", "directory of PostgreSQL's initdb, pg_basebackup and postgres for --against-postgres (default: the newest /usr/lib/postgresql/<version>/bin, as Debian's postgresql package installs them, else initdb's directory on PATH)")
	fs.IntVar(&cfg.PostgresReplicas, "postgres-replicas", 2, "with --against-postgres: streaming replicas r1..rN made with pg_basebackup, of which any one must have flushed a commit before it is acknowledged (synchronous_standby_names 'ANY 1 (r1, ...)'); 0: a lone primary, durable on its own disk only")
	fs.StringVar(&cfg.Auth, "auth", "none", "authentication of the clusters the bench starts: none, or token (every node runs with --auth=token, the admin token being --token or a random one the bench makes, written to admin.token in the cluster's directory under --dir; every request carries it)")
	fs.StringVar(&cfg.Token, "token", os.Getenv("RAFTCAT_TOKEN"), "API token sent as Authorization: Bearer to a --urls cluster run with --auth=token; with --auth token, the admin token of the started cluster [RAFTCAT_TOKEN]")
	fs.BoolVar(&cfg.Secure, "secure", false, "what transport security costs: start the cluster with TLS on every node's HTTP port, mutual TLS between nodes and encrypted gossip (and --auth token, implied), and beside it the same cluster without them; run the Delta workload on both in alternating rounds over kept-alive HTTPS connections, reporting throughput, p50 and p99 with TLS on over off, overall and by round, and the commit breakdown of both; with --protocol iceberg --against-postgres, raftcat's cluster runs with all of it against the SQL catalog, without a second cluster")
	fs.BoolVar(&cfg.AgainstAuthOff, "against-auth-off", false, "what authentication costs: start a second cluster without authentication beside the one with --auth token (implied) and run the Delta workload on both in alternating rounds, reporting throughput, p50 and p99 with authentication on over off, overall and by round, and the commit breakdown of both")
	o.serveFlagList = fs.String("serve-flags", "", "extra space-separated flags for each started node's raftcat serve, e.g. --serve-flags=--pprof")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the started clusters' data and logs, and the generated tables (default: a temporary one, removed afterwards)")
	return o
}

// resolve checks the parsed flags together and completes the
// configuration: the cluster's URLs and CA, the nodes' extra flags and
// this binary. ok is false when the command ends here, with code its
// exit status; messages start with the command's name.
func (o *benchOptions) resolve(fs *flag.FlagSet, stderr io.Writer) (code int, ok bool) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	cfg := &o.cfg
	if (cfg.AgainstAuthOff || cfg.Secure) && !o.set["auth"] {
		cfg.Auth = bench.AuthToken
	}
	msg := benchProtocolError(*cfg)
	if msg == "" {
		msg = benchAuthError(*cfg, *o.urls != "")
	}
	if msg == "" && cfg.PostgresReplicas < 0 {
		msg = "--postgres-replicas is 0 or more"
	}
	if msg == "" {
		msg = o.resolveTarget()
	}
	if msg == "" {
		msg = benchClientError(*cfg, o.set)
	}
	if msg != "" {
		fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), msg)
		return 2, false
	}
	return o.resolveCluster(fs, stderr)
}

// resolveTarget reads --target, or says what is wrong with it.
func (o *benchOptions) resolveTarget() string {
	switch *o.target {
	case "spread":
	case "leader":
		o.cfg.Leader = true
	default:
		return "--target is spread or leader"
	}
	return ""
}

// resolveCluster reads --urls, --ca-file and --serve-flags, and finds
// this binary, which a started cluster runs.
func (o *benchOptions) resolveCluster(fs *flag.FlagSet, stderr io.Writer) (code int, ok bool) {
	cfg := &o.cfg
	if *o.urls != "" {
		for _, u := range strings.Split(*o.urls, ",") {
			cfg.URLs = append(cfg.URLs, strings.TrimRight(strings.TrimSpace(u), "/"))
		}
		tlsConfig, err := (clientOptions{caFile: *o.caFile}).tlsConfig()
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
			return 2, false
		}
		cfg.TLS = tlsConfig
	}
	if *o.serveFlagList != "" {
		cfg.ServeFlags = strings.Fields(*o.serveFlagList)
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1, false
	}
	cfg.Bin = bin
	return 0, true
}

// benchProtocolError says what is wrong with --protocol and the systems
// compared, if anything.
func benchProtocolError(cfg bench.Config) string {
	switch {
	case cfg.Protocol != "delta" && cfg.Protocol != "iceberg" && cfg.Protocol != "sharing" && cfg.Protocol != "lance":
		return "--protocol is delta, iceberg, sharing or lance"
	case cfg.Protocol == "iceberg" && cfg.AgainstPostgres && cfg.AgainstEtcd:
		return "--protocol iceberg --against-postgres runs iceberg-go's SQL catalog; run --against-etcd apart"
	case cfg.Protocol == "sharing" && cfg.AgainstEtcd:
		return "--against-etcd compares commits; it does not go with --protocol sharing"
	case cfg.Protocol == "lance" && cfg.AgainstEtcd:
		return "--against-etcd compares the Delta commit path; it does not go with --protocol lance"
	case (cfg.Protocol == "sharing" || cfg.Protocol == "lance") && cfg.AgainstPostgres:
		return fmt.Sprintf("--against-postgres compares the Delta commit path; it does not go with --protocol %s", cfg.Protocol)
	}
	return ""
}
