package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/raftcat/raftcat/chaos"
)

// chaosCmd runs a chaos drill, or re-checks a recorded history.
func chaosCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		return chaosCheck(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("raftcat chaos", flag.ContinueOnError)
	cfg := chaos.Config{}
	fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long the workload runs under faults")
	fs.IntVar(&cfg.Nodes, "nodes", 3, "cluster size (3 or 5)")
	fs.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()), "seed of the fault schedule and the workload")
	fs.StringVar(&cfg.Out, "out", "chaos-out", "directory for history.jsonl, summary.json and node logs")
	fs.IntVar(&cfg.Tables, "tables", 3, "tables in the workload (with --protocol transactions: groups of three tables)")
	fs.IntVar(&cfg.ClientsPerTable, "clients", 2, "clients per table (or group)")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", 5*time.Second, "a fault starts this often")
	fs.DurationVar(&cfg.FaultFor, "fault-for", 2*time.Second, "how long each fault lasts before it is healed")
	faults := fs.String("faults", "", "comma-separated fault kinds to use (kill, pause, partition, split, latency; with --disk-faults power-cut, power-cut-all, torn, fsync-eio, read-eio, disk-full, slow, bitrot; default: all that can be injected)")
	fs.BoolVar(&cfg.Compose, "compose", false, "drill the running compose cluster (scripts/cluster-up.sh; --nodes 3 or 5) with docker kill, pause and network disconnects")
	fs.StringVar(&cfg.Protocol, "protocol", "delta", "commit path the clients write with: delta (add-commit of the next version), iceberg (Iceberg REST commits of a new snapshot asserting the loaded one with assert-ref-snapshot-id) or transactions (each of --tables is a group of a Delta, an Iceberg and a Lance table, advanced together by one transaction across formats per commit)")
	fs.StringVar(&cfg.Auth, "auth", "none", "authentication of the cluster the drill starts: none, or token (every node runs with --auth=token, the admin token being --token or a random one the drill makes, and every request of the drill carries it)")
	fs.StringVar(&cfg.Token, "token", os.Getenv("RAFTCAT_TOKEN"), "API token every request of the drill sends as Authorization: Bearer: the workload's and the checks' against the compose cluster run with --auth=token (scripts/cluster-up.sh writes it to .cluster-secrets/admin.token); with --auth token, the started cluster's admin token [RAFTCAT_TOKEN]")
	fs.StringVar(&cfg.CAFile, "ca-file", os.Getenv("RAFTCAT_CA_FILE"), "with --compose, the CA of a compose cluster started with scripts/cluster-up.sh --secure (.cluster-secrets/ca.pem): its nodes are then reached over HTTPS [RAFTCAT_CA_FILE]")
	fs.BoolVar(&cfg.Secure, "secure", false, "start the cluster with everything on: --auth=token (the admin token as with --auth token), TLS on every node's HTTP port, mutual TLS between nodes and encrypted gossip, from a CA, node certificates and a gossip key the drill makes in --out/tls; every request of the drill goes over HTTPS")
	fs.BoolVar(&cfg.DiskFaults, "disk-faults", chaos.DiskFaultsUsable() == nil, "put every node's data directory on a fault filesystem (FUSE: needs /dev/fuse, and root or fusermount3; on by default where it can be mounted), adding the disk faults: power cuts of one node or of all at once (plain or torn), failing syncs, failing reads of the raft log, a full disk, a slow disk, bit rot in the raft log")
	fs.StringVar(&cfg.LogStore, "raft-log-store", "", "every node's --raft-log-store: segments, boltdb or wal (default: the node's default)")
	aim := fs.String("aim", "any", "whom the faults of one node hit: any (the leader or a follower, as the seed picks), leader, or follower")
	fs.BoolVar(&cfg.Netns, "netns", true, "run each node in its own network namespace, adding partitions and latency to the faults (needs root; without it, kill and pause only)")
	help := usageText("Usage: raftcat chaos [flags]\n       raftcat chaos check HISTORY\n\n" +
		"Starts a local cluster of raftcat processes, runs commit clients (Delta, or with\n" +
		"--protocol iceberg Iceberg REST) against random nodes while killing (SIGKILL, restart from\n" +
		"the data dir), pausing (SIGSTOP/SIGCONT), partitioning (iptables in per-node network\n" +
		"namespaces) or slowing (netem) the leader or a follower, heals every fault, then checks the\n" +
		"recorded history: linearizability per table, no acknowledged commit lost, every replica at\n" +
		"the same state digest. Exits 1 on any violation. An Iceberg table is checked as a Delta\n" +
		"table is: its versions are its snapshots' sequence numbers, each bound to its snapshot id;\n" +
		"an unknown commit outcome is found out by loading the table (moved on: settled; still at\n" +
		"the base: retried identically). With --protocol transactions every commit is one\n" +
		"transaction across formats (POST .../transactions/commit) adding the next version to a\n" +
		"group's Delta, Iceberg and Lance tables: a group is checked as one table whose versions are\n" +
		"its transactions, and after healing every transaction, acknowledged, refused or of unknown\n" +
		"outcome, must be in all three tables at the same version or in none.\n\n" +
		"With --auth token the started cluster runs with authentication on and every request of the\n" +
		"drill carries its admin token; against a compose cluster run with authentication, give its\n" +
		"token with --token (or RAFTCAT_TOKEN). With --secure the started cluster runs with\n" +
		"authentication, TLS, mutual TLS between nodes and encrypted gossip all on.\n\n" +
		"With --disk-faults (on where FUSE can be mounted) every node's data directory is a fault\n" +
		"filesystem: power-cut and torn cut one node's power (its unsynced writes are lost, or torn),\n" +
		"power-cut-all every node's at once; fsync-eio fails the node's syncs (it must halt, exit 4),\n" +
		"read-eio its raft log's reads, disk-full fills its disk (as leader it must refuse writes\n" +
		"with 507 and resume by itself), slow adds 200 ms to each write and sync, bitrot flips bytes\n" +
		"of its oldest raft log file on restart (it must refuse to start, exit 4, or never serve the\n" +
		"damage). Each fault's outcome is printed, and every acknowledged commit must survive.\n\n")
	if code, ok := parseFlags(fs, args, stdout, stderr, help); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 0, "", stderr); !ok {
		return code
	}
	if *faults != "" {
		cfg.Faults = strings.Split(*faults, ",")
	}
	if *aim != "any" {
		cfg.Aim = *aim
	}
	if cfg.Aim != "" && cfg.Aim != chaos.AimLeader && cfg.Aim != chaos.AimFollower {
		fmt.Fprintln(stderr, "raftcat chaos: --aim is any, leader or follower")
		return 2
	}
	if cfg.LogStore != "" && cfg.LogStore != "segments" && cfg.LogStore != "boltdb" && cfg.LogStore != "wal" {
		fmt.Fprintln(stderr, "raftcat chaos: --raft-log-store is segments, boltdb or wal")
		return 2
	}
	if cfg.Protocol != "delta" && cfg.Protocol != chaos.ProtocolIceberg && cfg.Protocol != chaos.ProtocolTransactions {
		fmt.Fprintln(stderr, "raftcat chaos: --protocol is delta, iceberg or transactions")
		return 2
	}
	if cfg.Compose && cfg.Protocol == chaos.ProtocolTransactions {
		fmt.Fprintln(stderr, "raftcat chaos: --protocol transactions runs against a local cluster only (it writes Lance staging manifests into the warehouse)")
		return 2
	}
	if cfg.Auth != "none" && cfg.Auth != chaos.AuthToken {
		fmt.Fprintln(stderr, "raftcat chaos: --auth is none or token")
		return 2
	}
	if cfg.Secure && (cfg.Compose || cfg.Auth == "none" && authSet(fs)) {
		fmt.Fprintln(stderr, "raftcat chaos: --secure starts a local cluster with authentication on: not with --compose or --auth none")
		return 2
	}
	if cfg.Compose && cfg.Auth == chaos.AuthToken {
		fmt.Fprintln(stderr, "raftcat chaos: --auth is for the cluster the drill starts; give the compose cluster's token with --token (or RAFTCAT_TOKEN)")
		return 2
	}
	if cfg.Nodes < 1 || cfg.Tables < 1 || cfg.ClientsPerTable < 1 || cfg.FaultFor >= cfg.FaultEvery {
		fmt.Fprintln(stderr, "raftcat chaos: need --nodes, --tables, --clients >= 1 and --fault-for < --fault-every")
		return 2
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "raftcat chaos:", err)
		return 1
	}
	cfg.Bin = bin
	sum, err := chaos.Run(context.Background(), cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat chaos:", err)
		return 1
	}
	printSummary(stdout, sum, cfg.Out)
	if !sum.OK() {
		return 1
	}
	return 0
}

func printSummary(w io.Writer, s chaos.Summary, out string) {
	fmt.Fprintf(w, "\noperations            %d\n", s.Operations)
	fmt.Fprintf(w, "faults                %d\n", len(s.Faults))
	for _, f := range s.Faults {
		fmt.Fprintf(w, "  %-13s %-6s leader=%-5v recovered in %d ms%s\n", f.Kind, f.Target, f.Leader, f.RecoveryMs, outcomeOf(f))
	}
	fmt.Fprintf(w, "acknowledged commits  %d\n", s.AcknowledgedCommits)
	fmt.Fprintf(w, "lost commits          %d\n", s.LostCommits)
	if t := s.Transactions; t != nil {
		fmt.Fprintf(w, "transactions          %d acknowledged, %d refused, %d unknown (%d applied whole, %d absent whole), %d partial\n",
			t.Acknowledged, t.Refused, t.Unknown, t.UnknownApplied, t.UnknownAbsent, t.Partial)
	}
	fmt.Fprintf(w, "linearizable          %v\n", s.Linearizable)
	fmt.Fprintf(w, "converged             %v\n", s.Converged)
	fmt.Fprintf(w, "longest unavailable   %d ms\n", s.LongestUnavailableMs)
	if s.Secure {
		fmt.Fprintln(w, "transport security    TLS, mutual TLS between nodes, encrypted gossip")
	}
	if s.Auth == chaos.AuthToken {
		fmt.Fprintln(w, "authentication        token (every request carried it)")
		if s.Unauthenticated > 0 {
			fmt.Fprintf(w, "refused with 401      %d (the token was valid: a node could not verify it)\n", s.Unauthenticated)
		}
	}
	if s.DiskFaults {
		fmt.Fprintln(w, "disk faults           every data directory and the warehouse on a fault filesystem")
	}
	if s.FaultKindsNotAvailable != "" {
		fmt.Fprintf(w, "not injected          %s\n", s.FaultKindsNotAvailable)
	}
	printViolations(w, s.Result, "VIOLATION:")
	fmt.Fprintf(w, "history and summary in %s\n", out)
}

// outcomeOf is what the node did under a fault, for its summary line.
func outcomeOf(f chaos.Fault) string {
	if f.Outcome == "" {
		return ""
	}
	return ": " + f.Outcome
}

const chaosCheckHelp = "Usage: raftcat chaos check HISTORY\n" +
	"\n" +
	"Re-checks a recorded history (JSON lines): linearizability of every table,\n" +
	"no acknowledged commit lost, no version bound to two files. A pre-check first\n" +
	"proves stale reads, lost commits, versions bound to two files and reads of\n" +
	"versions whose commit had not begun, naming the operations (their index in the\n" +
	"history); porcupine searches only when it finds none. Exits 1 on any violation.\n\n"

func chaosCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftcat chaos check", flag.ContinueOnError)
	if code, ok := parseFlags(fs, args, stdout, stderr, usageText(chaosCheckHelp)); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 1, "HISTORY", stderr); !ok {
		return code
	}
	args = fs.Args()
	f, err := os.Open(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "raftcat chaos check:", err)
		return 2
	}
	defer f.Close()
	ops, err := chaos.ReadHistory(f)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat chaos check:", err)
		return 2
	}
	res := chaos.Check(ops, time.Minute)
	fmt.Fprintf(stdout, "operations %d, acknowledged commits %d, lost %d, linearizable %v\n",
		res.Operations, res.AcknowledgedCommits, res.LostCommits, res.Linearizable)
	if p := res.Precheck; p != nil {
		found := "found nothing"
		if n := len(p.Violations); n > 0 {
			found = fmt.Sprintf("proved %d violation(s)", n)
		}
		fmt.Fprintf(stdout, "pre-check %s in %v; linearizability decided by %s\n", found,
			time.Duration(p.DurationUs)*time.Microsecond, decidedBy(res))
	}
	printViolations(stdout, res, "violation:")
	out, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(out))
	if !res.OK() {
		return 1
	}
	return 0
}

// printViolations prints every violation on a line; after each one the
// pre-check proved, the operations it names, one a line.
func printViolations(w io.Writer, res chaos.Result, prefix string) {
	named := map[string][]chaos.OpRef{}
	if res.Precheck != nil {
		for _, v := range res.Precheck.Violations {
			named[v.Message] = v.Ops
		}
	}
	for _, v := range res.Violations {
		fmt.Fprintln(w, prefix, v)
		for _, op := range named[v] {
			fmt.Fprintf(w, "    %s\n", op)
		}
	}
}

func decidedBy(res chaos.Result) string {
	switch res.DecidedBy {
	case "precheck":
		return "the pre-check (porcupine not needed)"
	case "":
		return "nothing (porcupine ran out of time)"
	}
	return fmt.Sprintf("porcupine in %d ms", res.PorcupineMs)
}

// authSet reports whether --auth was given on the command line.
func authSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "auth" })
	return set
}
