package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/raftcat/raftcat/chaos"
)

// chaosCmd runs the chaos subcommands.
func chaosCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 || args[0] != "check" {
		fmt.Fprint(stderr, "Usage: raftcat chaos check HISTORY\n\nRe-checks a recorded history (JSON lines): linearizability of every table,\nno acknowledged commit lost, no version bound to two files. Exits 1 on any violation.\n")
		return 2
	}
	f, err := os.Open(args[1])
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
	for _, v := range res.Violations {
		fmt.Fprintln(stdout, "violation:", v)
	}
	out, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(out))
	if !res.OK() {
		return 1
	}
	return 0
}
