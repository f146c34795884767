package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/raftcat/raftcat/bench"
)

// runBenchScale runs `raftcat bench scale [flags]`: the many-tables
// measurements (memory per table, snapshot, restore, restart, a new
// node's InstallSnapshot, load latency against a small baseline).
func runBenchScale(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftcat bench scale", flag.ContinueOnError)
	var cfg bench.ScaleConfig
	fs.IntVar(&cfg.Tables, "tables", 1_000_000, "tables in the full state")
	fs.IntVar(&cfg.Schemas, "schemas", 1_000, "schemas the tables are spread over (table i in schema i mod schemas)")
	fs.IntVar(&cfg.CommitsPerTable, "commits", 10, "versions ratified per table after its create, each reporting the previous one published")
	fs.IntVar(&cfg.BaselineTables, "baseline-tables", 1_000, "tables in the small state whose load latency the full state's is compared with")
	fs.IntVar(&cfg.Loads, "loads", 2_000, "measured Delta API loads of random tables per state")
	fs.IntVar(&cfg.HTTPCommits, "http-commits", 100, "commits through the Delta API after the restore, replayed from the log by the restarted node")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the random table choices")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Minute, "longest wait for the cluster in any one step (restore, restart, new node)")
	fs.StringVar(&cfg.NodeMemoryLimit, "node-gomemlimit", "auto", "GOMEMLIMIT of every node (\"\" for none; auto: three quarters of this machine's memory over four nodes)")
	serveFlags := fs.String("serve-flags", "", "extra space-separated flags for each node's raftcat serve")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the snapshot files, node data dirs and logs (default: a temporary one, removed afterwards unless --keep)")
	keep := fs.Bool("keep", false, "keep the temporary directory")
	out := fs.String("out", "bench-scale.json", "where to write the machine-readable result")
	help := usageText("Usage: raftcat bench scale [flags]\n\n" +
		"Builds a catalog of --tables managed tables in process by applying real encoded commands to\n" +
		"the state machine (stage, create with the managed-table contract, --commits add-commits each)\n" +
		"and reports its memory per table; writes its snapshot (size, time) and reads it back; starts\n" +
		"three raftcat nodes of this binary on loopback and restores the snapshot through\n" +
		"POST /v1/cluster/restore. Then it measures Delta API load latency against a --baseline-tables\n" +
		"state and the full one, SIGKILLs and restarts a follower (snapshot plus log replay), and adds\n" +
		"a fourth, empty node (InstallSnapshot), timing each until its state digest equals the\n" +
		"leader's. The result goes to --out as JSON. At the defaults it needs about 10 GiB of disk,\n" +
		"20 GiB of memory (four nodes of about 4.5 GiB each) and some 25 minutes on two cores.\n\n")
	if code, ok := parseFlags(fs, args, stdout, stderr, help); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 0, "", stderr); !ok {
		return code
	}
	if *serveFlags != "" {
		cfg.Flags = strings.Fields(*serveFlags)
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "raftcat bench scale:", err)
		return 1
	}
	cfg.Bin = bin
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "raftcat-bench-scale-"); err != nil {
			fmt.Fprintln(stderr, "raftcat bench scale:", err)
			return 1
		}
		if !*keep {
			defer os.RemoveAll(cfg.Dir)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, runErr := bench.RunScale(ctx, cfg, stderr)
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(stderr, "raftcat bench scale:", err)
		return 1
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "raftcat bench scale:", runErr)
		fmt.Fprintf(stderr, "partial result written to %s\n", *out)
		return 1
	}
	fmt.Fprint(stdout, res.Text())
	fmt.Fprintf(stdout, "result written to %s\n", *out)
	return 0
}
