// Command raftcat runs a node of the raftcat catalog cluster, and talks to
// running nodes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/admin"
	"github.com/raftcat/raftcat/httpapi/deltaapi"
	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/httpapi/protocols"
	"github.com/raftcat/raftcat/httpapi/sharing"
	"github.com/raftcat/raftcat/httpapi/ui"
	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/metrics"
	"github.com/raftcat/raftcat/storage"
)

const usage = `raftcat: a Raft-replicated table catalog serving the Unity Catalog Delta API.

Usage:
  raftcat [serve] [flags]                    run a node (the default; with no flags, a single-node cluster)
  raftcat healthcheck [--addr URL]           exit 0 if that node is ready (container healthchecks; --leader: and leads)
  raftcat members [--addr URL]               list the cluster's nodes: raft role and gossip status
  raftcat snapshot save [--addr URL] FILE    save a consistent backup of the whole catalog
  raftcat snapshot inspect FILE              verify a backup and print what it holds
  raftcat snapshot restore [--addr URL] FILE replace the cluster's state with a backup
  raftcat transfer-leadership [--addr URL]   hand leadership to another node
  raftcat leave [--addr URL]                 make that node leave the cluster and stop
  raftcat remove-node [--addr URL] ID        remove a (dead) node from the cluster
  raftcat chaos [flags]                      a chaos drill on a local cluster, checked for lost commits
  raftcat chaos check HISTORY                re-check a recorded client history for violations
  raftcat bench [flags]                      measure commits/s and latency (optionally against etcd)
  raftcat bench series [flags]               measure commits/s and p99 from 1 to 128 clients: table and plot
  raftcat bench scale [flags]                measure a million-table catalog: memory, snapshots, restarts
  raftcat log show|skip [flags]              inspect a stopped node's raft log; skip an entry it halted on
  raftcat auth principal|token|whoami ...    manage principals and API tokens ('raftcat auth --help')
  raftcat tls ca|cert create [flags]         make a CA, and node and client certificates it signs ('raftcat tls --help')
  raftcat gossip keygen|keys ...             make gossip keys, rotate the cluster's ('raftcat gossip --help')
  raftcat version                            print the version

--addr names any node (default http://127.0.0.1:8080, or RAFTCAT_ADDR);
followers forward to the leader. --token (or RAFTCAT_TOKEN) is the API token
those commands send to a cluster run with --auth=token. For a node serving
HTTPS, --addr is https://..., --ca-file (RAFTCAT_CA_FILE) the CA that signed
its certificate (default: the system's), and --cert-file and --key-file
(RAFTCAT_CERT_FILE, RAFTCAT_KEY_FILE) a client certificate, for a node run
with --tls-client-ca-file.

Run 'raftcat serve --help' for the node's flags ('raftcat --help' prints this). Every flag can also be set
through an environment variable: --node-id is RAFTCAT_NODE_ID, and so on.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && (isHelpFlag(args[0]) || len(args[0]) > 0 && args[0][0] != '-') {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, stdout, stderr)
	case "healthcheck":
		return healthcheck(args, stdout, stderr)
	case "snapshot":
		return snapshotCmd(args, stdout, stderr)
	case "members":
		return membersCmd(args, stdout, stderr)
	case "auth":
		return authCmd(args, stdout, stderr)
	case "tls":
		return tlsCmd(args, stdout, stderr)
	case "gossip":
		return gossipCmd(args, stdout, stderr)
	case "remove-node":
		return postCmd("remove-node", "/v1/cluster/remove-node", args, stdout, stderr, 1)
	case "transfer-leadership":
		return postCmd("transfer-leadership", "/v1/cluster/transfer-leadership", args, stdout, stderr, 0)
	case "chaos":
		return chaosCmd(args, stdout, stderr)
	case "bench":
		return benchCmd(args, stdout, stderr)
	case "log":
		return logCmd(args, stdout, stderr)
	case "leave":
		return postCmd("leave", "/v1/cluster/leave", args, stdout, stderr, 0)
	case "version":
		fmt.Fprintln(stdout, "raftcat", cluster.Version)
		return 0
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	if isHelpFlag(cmd) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	return unknownCommand(stderr, "raftcat", cmd)
}

// isHelpFlag reports whether a first argument asks for the usage: every
// other dash-argument there is a flag of serve, the default command.
func isHelpFlag(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// flagHelp is one flag's entry in serve's usage. The default is printed
// once: a flag whose text already says what its default is ("(default:
// --raft-addr)") gets no second one, and zero values are not printed.
func flagHelp(f *flag.Flag) string {
	line := fmt.Sprintf("  --%s [%s]\n    \t%s", f.Name, envName(f.Name), f.Usage)
	switch f.DefValue {
	case "", "0", "0s", "false":
	default:
		if !strings.Contains(f.Usage, "(default") {
			line += fmt.Sprintf(" (default %q)", f.DefValue)
		}
	}
	return line + "\n"
}

// serveUsage is serve's help: every flag with its environment variable.
func serveUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "Usage: raftcat serve [flags]\n\nRuns one node. Start every node of a cluster with the same --bootstrap-expect\n"+
		"and --join pointing at the others' gossip addresses; the cluster forms once\nthat many nodes see each other.\n\n"+
		"Flags (environment variable in brackets):\n")
	fs.VisitAll(func(f *flag.Flag) { fmt.Fprint(w, flagHelp(f)) })
}

func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftcat serve", flag.ContinueOnError)
	var cfg Config
	cfg.bindFlags(fs)
	if code, ok := parseFlags(fs, args, stdout, stderr, serveUsage); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 0, "", stderr); !ok {
		return code
	}
	if err := applyEnv(fs); err != nil {
		fmt.Fprintln(stderr, "raftcat:", err)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "raftcat: invalid configuration:\n", err)
		return 2
	}
	level, _ := parseLevel(cfg.LogLevel)
	recent := logging.NewRecent(0)
	log, _ := logging.New(stderr, cfg.LogFormat, level, recent)
	log = log.With("node", cfg.NodeID)
	if err := runNode(cfg, log, recent); err != nil {
		if errors.Is(err, errHaltedLogged) {
			return exitHalted
		}
		if errors.Is(err, errDiskFailedLogged) {
			return exitDiskFailed
		}
		if damagedData(err) {
			log.Error("raftcat will not start: its data directory is damaged", "err", err)
			return exitDiskFailed
		}
		if errors.Is(err, cluster.ErrHalted) {
			log.Error("raftcat will not start", "err", err)
			return exitHalted
		}
		if errors.Is(err, cluster.ErrDataDirInUse) {
			log.Error("raftcat will not start", "err", err)
			return 1
		}
		log.Error("raftcat stopped with an error", "err", err)
		return 1
	}
	return 0
}

// runNode serves until SIGINT or SIGTERM, then shuts down gracefully:
// stop accepting, finish in-flight requests, close raft.
func runNode(cfg Config, log *slog.Logger, recent *logging.Recent) error {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on --http-addr %s: %w", cfg.HTTPAddr, err)
	}
	reg := prometheus.NewRegistry()
	metricsHandler := metrics.Handler(reg, cluster.Version, log)
	if cfg.MetricsAddr != "" {
		stopMetrics, err := serveMetrics(cfg.MetricsAddr, metricsHandler, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopMetrics()
		metricsHandler = nil
	}
	na, err := cfg.Auth.build()
	if err != nil {
		ln.Close()
		return err
	}
	defer na.closeAudit()
	serverTLS, clusterTLS, err := cfg.TLS.load(log)
	if err != nil {
		ln.Close()
		return err
	}
	cfg.Auth.warn(log, ln.Addr().String(), cfg.Credentials, serverTLS != nil)
	cc := cfg.clusterConfig(log, reg)
	cc.TLS = clusterTLS
	node, err := cluster.Open(cc)
	if err != nil {
		ln.Close()
		return err
	}
	blobs := storage.NewBlobs(cfg.Objects)
	defer blobs.Close()
	objects := storage.Instrumented(blobs, reg, cfg.StorageRoot)
	hc := httpapi.Config{MaxBodyBytes: cfg.MaxBodyBytes, Logger: log, DataDir: cfg.DataDir, Metrics: reg,
		ReadTimeout: cfg.HTTPReadTimeout, IdleTimeout: cfg.HTTPIdleTimeout, FrameTimeout: cfg.RelayFrameTimeout,
		FollowerReads: cfg.FollowerReads}
	na.apply(&hc)
	// Peers are served on the cluster port always; with TLS on either
	// port they are reached there alone (the client port may be HTTPS,
	// and node-to-node traffic must not cross it).
	hc.Peers, hc.PeersOnly = node, serverTLS != nil || clusterTLS != nil
	api := httpapi.New(node, hc)
	adm := protocols.Mount(api, node, protocols.Config{Admin: admin.Config{Pprof: cfg.Pprof, Metrics: metricsHandler},
		Delta:   deltaapi.Config{Credentials: cfg.Credentials, Objects: objects},
		Iceberg: iceberg.Config{Objects: objects, Credentials: cfg.Credentials},
		Sharing: sharing.Config{Objects: objects, Endpoint: cfg.SharingEndpoint, URLTTL: cfg.SharingURLTTL,
			TokenLifetime: cfg.SharingTokenLifetime, CacheBytes: cfg.SharingCacheMiB << 20},
		Lance: lance.Config{Objects: objects, Credentials: cfg.Credentials}, UI: ui.Config{Recent: recent}})
	stopBootstrap := api.StartBootstrap(na.adminToken)
	defer stopBootstrap()
	srv := api.HTTPServer()
	srv.ErrorLog = serverErrorLog(log)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(httpListener(ln, api, serverTLS)) }()
	log.Info("serving HTTP", "http_addr", ln.Addr().String(), "storage_root", cfg.StorageRoot,
		"tls", serverTLS != nil, "client_certificates_required", cfg.TLS.ClientCAFile != "")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		if cfg.LeaveOnTerminate {
			leaveCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if lerr := adm.Leave(leaveCtx); lerr != nil {
				log.Warn("could not leave the cluster before stopping", "err", lerr)
			}
			cancel()
		}
	case <-node.Done():
		log.Info("node left the cluster; shutting down")
	case <-node.Halted():
		// Nothing more can be applied here, and nothing is proposed; a
		// graceful stop would only hand leadership to a node that halts on
		// the same entry. Close the HTTP and relay connections, then stay
		// in raft (applying nothing) a moment so followers learn that the
		// entry is committed and halt on it too, rather than being left
		// without a quorum and unaware.
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = api.Shutdown(closeCtx, srv)
		cancel()
		time.Sleep(2 * max(cfg.HeartbeatTimeout, cfg.ElectionTimeout))
		return errHaltedLogged
	case <-node.DiskFailed():
		// The node left raft when the write failed (logged there); stop
		// serving and exit, leaving the disk as it is.
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = api.Shutdown(closeCtx, srv)
		cancel()
		_ = node.Shutdown()
		return errDiskFailedLogged
	case err = <-serveErr:
		log.Error("HTTP server failed", "err", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if serr := api.Shutdown(shutdownCtx, srv); serr != nil {
		log.Warn("HTTP shutdown", "err", serr)
	}
	if nerr := node.Shutdown(); nerr != nil {
		return nerr
	}
	return err
}

// serveMetrics serves GET /metrics alone on addr (--metrics-addr); the
// returned function stops it.
func serveMetrics(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: httpapi.DefaultReadHeaderTimeout}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "err", err)
		}
	}()
	log.Info("serving metrics", "metrics_addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// errHaltedLogged ends a node that halted while running; the halt was
// logged where it happened.
var errHaltedLogged = errors.New("halted")

// damagedData tells an error about data the disk gave back changed.
func damagedData(err error) bool {
	return errors.Is(err, cluster.ErrStableDamaged) || errors.Is(err, cluster.ErrLogDamaged)
}

// errDiskFailedLogged ends a node whose disk failed a write or a sync; the
// failure was logged where it happened.
var errDiskFailedLogged = errors.New("disk failed")

func healthcheck(args []string, stdout, stderr io.Writer) int {
	leader := false
	addr, _, code, ok := adminFlagsWith("healthcheck", "healthcheck [--addr URL] [--leader]", args, stdout, stderr, 0, func(fs *flag.FlagSet) {
		fs.BoolVar(&leader, "leader", false, "exit 0 only if that node is also the leader (GET /readyz?leader; for scripts and load balancers, not container healthchecks: it fails on every follower)")
	})
	if !ok {
		return code
	}
	path, what := "/readyz", "ready"
	if leader {
		path, what = "/readyz?leader", "the ready leader"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr+path, nil)
	if err != nil {
		fmt.Fprintln(stderr, "not "+what+":", err)
		return 1
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "not "+what+":", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(stderr, "not "+what+": HTTP", resp.StatusCode)
		return 1
	}
	fmt.Fprintln(stdout, what)
	return 0
}
