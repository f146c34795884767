package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/raftcat/raftcat/internal/faultfs"
)

// Disk faults. With Config.DiskFaults every node's data directory is a
// fault filesystem (internal/faultfs): what a node wrote but did not sync
// is lost when its power is cut, and its disk can fail syncs or reads,
// fill up, slow down or rot. What the node is expected to do: halt (exit
// status 4) on a failed raft write or sync, refuse writes with 507 while
// its disk is full and resume by itself, refuse to start (exit status 4)
// on damaged data or run on without serving it, and after a power cut
// come back with everything it acknowledged.

// DiskFaultKinds are the fault kinds a cluster on fault filesystems adds.
var DiskFaultKinds = []string{"power-cut", "power-cut-all", "torn", "fsync-eio", "read-eio", "disk-full", "slow", "bitrot"}

// exitDiskFailed is the exit status of a node that halted on a failed
// disk or refused to start on damaged data.
const exitDiskFailed = 4

// DiskFaultsUsable returns why fault filesystems cannot be mounted here
// (nil: they can): FUSE needs /dev/fuse, and root or fusermount3.
func DiskFaultsUsable() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return errors.New("no /dev/fuse")
	}
	if os.Geteuid() == 0 {
		return nil
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		return errors.New("not root and no fusermount3")
	}
	return nil
}

// CutSummary is what the power cuts of a fault dropped, over its nodes.
type CutSummary struct {
	Files           int `json:"files"` // files with unsynced data or size
	PagesDropped    int `json:"pages_dropped"`
	PagesKept       int `json:"pages_kept,omitempty"` // a torn cut's unsynced pages that survived
	EntriesReverted int `json:"entries_reverted"`     // directory entries no sync covered, undone
}

func sumCuts(reps []faultfs.CutReport) *CutSummary {
	s := &CutSummary{}
	for _, r := range reps {
		s.Files += r.Files
		s.PagesDropped += r.PagesDropped
		s.PagesKept += r.PagesKept
		s.EntriesReverted += r.EntriesReverted
	}
	return s
}

func (s *CutSummary) String() string {
	out := count(int64(s.PagesDropped), "page", "pages") + " dropped"
	if s.PagesKept > 0 {
		out += fmt.Sprintf(", %s kept", thousands(s.PagesKept))
	}
	return out + ", " + count(int64(s.EntriesReverted), "entry", "entries") + " reverted"
}

// thousands spells n with thousands separators, as reports do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// count spells n things, as "1 sync" or "12 syncs".
func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(int(n)) + " " + many
}

// firedText spells how often a fault fired.
func firedText(one, many string) func(n int64) string {
	return func(n int64) string { return count(n, one, many) }
}

// joinOutcome adds what happened next to an outcome.
func joinOutcome(outcome, next string) string {
	if outcome == "" {
		return next
	}
	return outcome + "; " + next
}

// injectDisk starts disk fault f on node i (every node for power-cut-all)
// and returns what heals it.
func (c *LocalCluster) injectDisk(f *Fault, i int, rng *rand.Rand) (func() error, error) {
	switch f.Kind {
	case "power-cut", "torn":
		return c.powerCut(f, f.Kind == "torn", i)
	case "power-cut-all":
		all := make([]int, len(c.Names()))
		for j := range all {
			all[j] = j
			c.touch(f, j)
		}
		return c.powerCut(f, false, all...)
	case "fsync-eio":
		return c.fsyncEIO(f, i), nil
	case "read-eio":
		ft := faultfs.Fault{Kind: faultfs.ReadEIO, Path: c.logPattern(i)}
		return c.inPlace(f, i, ft, firedText("read of the raft log failed", "reads of the raft log failed")), nil
	case "disk-full":
		ft := faultfs.Fault{Kind: faultfs.NoSpace, Limit: c.Disk(i).Used() + 1<<20}
		f.Detail = fmt.Sprintf("the disk holds %s bytes", thousands(int(ft.Limit)))
		return c.inPlace(f, i, ft, firedText("write refused by the disk (ENOSPC)", "writes refused by the disk (ENOSPC)")), nil
	case "slow":
		ft := faultfs.Fault{Kind: faultfs.Slow, Latency: slowBy}
		f.Detail = fmt.Sprintf("%v added to every write and sync", slowBy)
		return c.inPlace(f, i, ft, firedText("write or sync slowed", "writes and syncs slowed")), nil
	case "bitrot":
		return c.bitRot(f, i, rng)
	}
	return func() error { return nil }, fmt.Errorf("unknown fault kind %q", f.Kind)
}

// slowBy is what a slow disk adds to every write and sync.
const slowBy = 200 * time.Millisecond

// powerCut cuts the power of the nodes at once; the heal restarts them.
func (c *LocalCluster) powerCut(f *Fault, torn bool, nodes ...int) (func() error, error) {
	reps, err := c.PowerCut(torn, nodes...)
	f.Cut = sumCuts(reps)
	f.Outcome = f.Cut.String()
	heal := func() error {
		var errs []error
		for _, i := range nodes {
			errs = append(errs, c.restart(i))
		}
		f.Outcome = joinOutcome(f.Outcome, "restarted")
		return errors.Join(errs...)
	}
	return heal, err
}

// fsyncEIO fails every sync of node i's disk: the node should halt. The
// heal is a reboot: kill it if it still runs, cut the power (the pages
// the failed syncs covered are gone), mend the disk, restart.
func (c *LocalCluster) fsyncEIO(f *Fault, i int) func() error {
	d := c.Disk(i)
	before := d.Stats().FaultsFired[faultfs.FsyncEIO]
	d.Inject(faultfs.Fault{Kind: faultfs.FsyncEIO})
	return func() error {
		failed := d.Stats().FaultsFired[faultfs.FsyncEIO] - before
		if out := c.selfExit(f, i); out != "" {
			f.Outcome = out
		} else {
			f.Outcome = "did not halt"
		}
		f.Outcome += fmt.Sprintf(" (%s failed)", count(failed, "sync", "syncs"))
		reps, err := c.PowerCut(false, i)
		d.Clear()
		f.Cut = sumCuts(reps)
		f.Outcome = joinOutcome(f.Outcome, "power cut: "+f.Cut.String()+"; restarted")
		return errors.Join(err, c.restart(i))
	}
}

// inPlace sets ft on node i's disk while the node runs; the heal clears
// it, and restarts the node if it exited.
func (c *LocalCluster) inPlace(f *Fault, i int, ft faultfs.Fault, fired func(n int64) string) func() error {
	before := c.Disk(i).Stats().FaultsFired[ft.Kind]
	c.Disk(i).Inject(ft)
	return c.healInPlace(f, i, ft.Kind, before, fired)
}

// healInPlace clears node i's disk faults and restarts the node if it
// exited, saying how often the fault fired and what the node did.
func (c *LocalCluster) healInPlace(f *Fault, i int, k faultfs.Kind, before int64, fired func(n int64) string) func() error {
	return func() error {
		d := c.Disk(i)
		f.Outcome = joinOutcome(f.Outcome, fired(d.Stats().FaultsFired[k]-before))
		out := c.selfExit(f, i)
		d.Clear()
		if out == "" {
			f.Outcome = joinOutcome(f.Outcome, "kept running")
			return nil
		}
		f.Outcome = joinOutcome(f.Outcome, out+", restarted")
		return c.restart(i)
	}
}

// bitRot restarts node i with a range of its oldest raft log file reading
// back flipped: it should refuse to start, or run on without serving the
// damage. The heal mends the disk and restarts the node if it exited.
func (c *LocalCluster) bitRot(f *Fault, i int, rng *rand.Rand) (func() error, error) {
	had := lastIndex(c.URLs()[i])
	c.Kill(i)
	rel, off, n, err := c.rotRange(i, rng)
	if err != nil {
		return func() error { return c.restart(i) }, err
	}
	d := c.Disk(i)
	before := d.Stats().FaultsFired[faultfs.BitRot]
	d.Inject(faultfs.Fault{Kind: faultfs.BitRot, Path: rel, Off: off, Len: n})
	f.Detail = fmt.Sprintf("%d bytes at offset %d of %s", n, off, rel)
	heal := c.healInPlace(f, i, faultfs.BitRot, before, firedText("read rotted", "reads rotted"))
	return func() error {
		y, cut := c.logCutBack(i)
		err := heal()
		if cut && y < had {
			// A kill loses nothing written, so the log the node came back
			// with should end where it did: it dropped what followed the damage.
			f.Outcome = joinOutcome(f.Outcome, fmt.Sprintf("but its raft log ended at index %d on restart, not %d: "+
				"it dropped the entries from the damage on", y, had))
		}
		return err
	}, c.restart(i)
}

// lastIndex is the last index of the raft log of the node at url (0 if
// it does not answer).
func lastIndex(url string) uint64 {
	var st struct {
		LastIndex uint64 `json:"last_index"`
	}
	if getJSON(url+"/v1/cluster", &st) != nil {
		return 0
	}
	return st.LastIndex
}

// cutBackRe is what raft logs when the leader sends a follower entries
// after the end of its log, with where that log ends.
var cutBackRe = regexp.MustCompile(`failed to get previous log: previous-index=\d+ last-index=(\d+)`)

// logCutBack is where node i's raft log ended when the leader first
// found it short since the node last started, if it did.
func (c *LocalCluster) logCutBack(i int) (uint64, bool) {
	raw, err := os.ReadFile(c.logPath(i))
	if err != nil || int64(len(raw)) < c.logOff[i] {
		return 0, false
	}
	m := cutBackRe.FindSubmatch(raw[c.logOff[i]:])
	if m == nil {
		return 0, false
	}
	y, err := strconv.ParseUint(string(m[1]), 10, 64)
	return y, err == nil
}

// selfExit says, if node i exited by itself, why and with what status
// (recorded in f), and "" if it runs. A node that logged its halt is
// waited for (up to haltExitWait): it stops serving and leaves raft
// before it exits, which may outlast the fault.
func (c *LocalCluster) selfExit(f *Fault, i int) string {
	if c.Running(i) && c.haltLogged(i) {
		ctx, cancel := context.WithTimeout(context.Background(), haltExitWait)
		_, _ = c.WaitExit(ctx, i)
		cancel()
	}
	if c.Running(i) {
		return ""
	}
	out, code := c.exitOutcome(i)
	f.ExitStatus = &code
	return out
}

// exitOutcome is why node i's process exited, from its exit status and
// its log, as "halted, exit 4".
func (c *LocalCluster) exitOutcome(i int) (string, int) {
	code, err := c.WaitExit(context.Background(), i)
	if err != nil {
		return "exited: " + err.Error(), -1
	}
	return fmt.Sprintf("%s, exit %d", c.exitReason(i), code), code
}

// exitReasons are what a node logs as it stops by itself, and what the
// drill calls it.
var exitReasons = []struct{ logged, reason string }{
	{"halting: the disk failed a raft write", "halted"},
	{"halting: a raft log entry read back damaged", "halted on a damaged log entry"},
	{"cannot apply log entry: node halted", "halted on a log entry it cannot apply"},
	{"its data directory is damaged", "refused to start: damaged data"},
	{"raftcat will not start", "refused to start"},
	// After "raftcat will not start" on its line: the halt it keeps.
	{"node halted on a log entry it cannot apply", "refused to start: halted on a log entry it cannot apply"},
	{"raftcat stopped with an error", "stopped with an error"},
}

// haltExitWait bounds the wait for a node that logged its halt to exit.
const haltExitWait = 15 * time.Second

// haltLogged reports whether node i's running process logged that it
// halts.
func (c *LocalCluster) haltLogged(i int) bool {
	raw, err := os.ReadFile(c.logPath(i))
	return err == nil && int64(len(raw)) >= c.logOff[i] && strings.Contains(string(raw[c.logOff[i]:]), "halting: ")
}

// exitReason reads why node i's last process stopped from what it logged.
func (c *LocalCluster) exitReason(i int) string {
	raw, err := os.ReadFile(c.logPath(i))
	if err != nil || int64(len(raw)) < c.logOff[i] {
		return "exited"
	}
	text := string(raw[c.logOff[i]:])
	reason, at := "exited", -1
	for _, r := range exitReasons {
		if k := strings.LastIndex(text, r.logged); k > at {
			reason, at = r.reason, k
		}
	}
	return reason
}
