package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/fsm"
)

const logUsage = `Usage:
  raftcat log show [--data-dir DIR] [--index N] [--full]
  raftcat log skip [--data-dir DIR] --index N --sha256 HASH [--force]

Reads the raft log of a STOPPED node, for the case where a node halted on
a log entry it cannot apply (it exits with status 3 and logs the entry's
index and command type).

  show   prints an entry: its term, command type, size, sha256, whether
         this version decodes it, and its payload. Without --index it shows
         the entry the node halted on, if any.
  skip   records the decision to apply that entry as a no-op. The sha256
         (from show) pins the decision to the entry's exact bytes. Give
         the same decision to EVERY node of the cluster, each stopped,
         before starting them again: a node without it halts again on the
         same entry. The request that wrote the entry is lost; every later
         entry applies as usual. skip refuses a node that did not halt on
         that entry: one that applied it (a newer release may) must not skip
         it. --force records it anyway, for a node that has not reached the
         entry yet or will join later.

The alternative to skipping is restoring a backup on a new cluster
(raftcat snapshot restore). See docs/operations.md.
`

const (
	exitHalted     = 3 // a node halted on a log entry it cannot apply
	exitDiskFailed = 4 // a node halted because its disk failed a write or a sync, or gave back damaged data
)

func logCmd(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, logUsage)
		return 2
	case isHelpFlag(args[0]):
		fmt.Fprint(stdout, logUsage)
		return 0
	case args[0] != "show" && args[0] != "skip":
		return unknownCommand(stderr, "raftcat log", args[0])
	}
	fs := flag.NewFlagSet("raftcat log "+args[0], flag.ContinueOnError)
	dataDir := fs.String("data-dir", envOr("RAFTCAT_DATA_DIR", "./raftcat-data"), "the node's data directory")
	index := fs.Uint64("index", 0, "the entry's raft index")
	sha := fs.String("sha256", "", "the entry's sha256, as 'log show' prints it (skip)")
	full := fs.Bool("full", false, "print the whole payload (show)")
	force := fs.Bool("force", false, "record the decision on a node that did not halt on the entry (skip); see below")
	if code, ok := parseFlags(fs, args[1:], stdout, stderr, usageText(logUsage+"\nFlags:\n")); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 0, "", stderr); !ok {
		return code
	}
	if args[0] == "skip" {
		return logSkip(*dataDir, *index, *sha, *force, stdout, stderr)
	}
	return logShow(*dataDir, *index, *full, stdout, stderr)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func logShow(dataDir string, index uint64, full bool, stdout, stderr io.Writer) int {
	h, halted, err := cluster.ReadHalt(dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat log show:", err)
		return 1
	}
	if halted {
		fmt.Fprintf(stdout, "halted on %s\n  (raftcat %s, at %s)\n", h, h.Version, h.HaltedAt)
		if index == 0 {
			index = h.Index
		}
	}
	r, err := cluster.OpenLog(dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat log show:", err)
		return 1
	}
	defer r.Close()
	first, last, err := r.Bounds()
	if err != nil {
		fmt.Fprintln(stderr, "raftcat log show:", err)
		return 1
	}
	fmt.Fprintf(stdout, "log of %s: entries %d..%d\n", dataDir, first, last)
	if index == 0 {
		return 0
	}
	e, err := r.Entry(index)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat log show:", err)
		return 1
	}
	printEntry(stdout, dataDir, e, full)
	return 0
}

func printEntry(w io.Writer, dataDir string, e cluster.LogEntry, full bool) {
	fmt.Fprintf(w, "entry %d\n  term          %d\n  raft type     %s\n  size          %d bytes\n  sha256        %s\n",
		e.Index, e.Term, e.Type, len(e.Data), cluster.EntryHash(e.Data))
	if len(e.Data) >= 2 {
		fmt.Fprintf(w, "  command type  %d %s, payload version %d\n", e.Data[0], fsm.CommandType(e.Data[0]), e.Data[1])
	}
	if _, err := fsm.Decode(e.Data); err != nil {
		fmt.Fprintf(w, "  decodes       no: %s\n", clip(err.Error(), 300))
	} else {
		fmt.Fprintf(w, "  decodes       yes\n")
	}
	payload := string(e.Data[min(2, len(e.Data)):])
	if !full {
		payload = clip(payload, 2000)
	}
	fmt.Fprintf(w, "  payload       %s\n", payload)
	fmt.Fprintf(w, "To skip it, on every node (each stopped), the same decision:\n  raftcat log skip --data-dir %s --index %d --sha256 %s\n",
		dataDir, e.Index, cluster.EntryHash(e.Data))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… (" + strconv.Itoa(len(s)-n) + " more bytes; --full prints them)"
}

func logSkip(dataDir string, index uint64, sha string, force bool, stdout, stderr io.Writer) int {
	if index == 0 || sha == "" {
		fmt.Fprintln(stderr, "raftcat log skip: --index and --sha256 are required (raftcat log show prints both)")
		return 2
	}
	if code := checkHaltedOn(dataDir, index, sha, force, stderr); code != 0 {
		return code
	}
	if code := checkEntryHash(dataDir, index, sha, stderr); code != 0 {
		return code
	}
	if err := cluster.SkipEntry(dataDir, index, sha); err != nil {
		fmt.Fprintln(stderr, "raftcat log skip:", err)
		return 1
	}
	fmt.Fprintf(stdout, "entry %d (sha256 %s) will apply as a no-op on this node.\n"+
		"Give the same decision to every other node before starting any of them.\n", index, sha)
	return 0
}

// checkHaltedOn refuses, without --force, a decision for a node that did
// not halt on that entry: it may have applied it (a newer release can),
// and skipping it there would lose a write the others keep.
func checkHaltedOn(dataDir string, index uint64, sha string, force bool, stderr io.Writer) int {
	h, halted, err := cluster.ReadHalt(dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat log skip:", err)
		return 1
	}
	if force || halted && h.Index == index && h.SHA256 == sha {
		return 0
	}
	fmt.Fprintf(stderr, "raftcat log skip: this node did not halt on entry %d (sha256 %s); nothing recorded.\n"+
		"Skip an entry only where every node halted on it. A node that has not reached it yet (or a new one)\n"+
		"takes the decision with --force; a node that applied it must not skip it.\n", index, sha)
	return 1
}

// checkEntryHash refuses a decision that does not match this node's entry.
// A node whose log no longer holds the entry (compacted into a snapshot,
// or not yet received), or that has no log yet, still takes the decision.
func checkEntryHash(dataDir string, index uint64, sha string, stderr io.Writer) int {
	if _, err := os.Stat(filepath.Join(dataDir, "raft", "raft.db")); errors.Is(err, os.ErrNotExist) {
		return 0
	}
	r, err := cluster.OpenLog(dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat log skip:", err)
		return 1
	}
	defer r.Close()
	e, err := r.Entry(index)
	if err != nil {
		return 0
	}
	if got := cluster.EntryHash(e.Data); got != sha {
		fmt.Fprintf(stderr, "raftcat log skip: entry %d on this node has sha256 %s, not %s; nothing recorded\n", index, got, sha)
		return 1
	}
	return 0
}
