package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/raftlog"
)

// A node that cannot apply a committed log entry must not go on: skipping
// it on its own would make it diverge from the other replicas. It halts
// instead, with one log line naming the entry, and leaves a marker in its
// data directory so that a restart refuses at once instead of replaying
// the log into the same entry. The way out is an operator's decision,
// given identically to every node (SkipEntry), or a restore from a backup.

// Files in the data directory.
const (
	haltFile = "halted.json"       // the entry this node halted on
	skipFile = "skip-entries.json" // entries an operator decided to skip
)

// ErrHalted means the node halted on a log entry it cannot apply and will
// not start until an operator decided what to do with it.
var ErrHalted = errors.New("node halted on a log entry it cannot apply")

// Halt describes the entry a node halted on.
type Halt struct {
	Index       uint64 `json:"index"`
	Term        uint64 `json:"term"`
	CommandType uint8  `json:"command_type"`
	CommandName string `json:"command_name"`
	SHA256      string `json:"sha256"`
	Error       string `json:"error"`
	Detail      string `json:"detail,omitempty"` // a panic's stack
	Version     string `json:"version"`          // raftcat version that halted
	HaltedAt    string `json:"halted_at"`
}

// Skip is an operator's decision to apply one entry as a no-op. The hash
// pins the decision to the entry's exact bytes.
type Skip struct {
	Index  uint64 `json:"index"`
	SHA256 string `json:"sha256"`
}

// EntryHash is the hex sha256 of a log entry's data.
func EntryHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func commandTypeOf(data []byte) (uint8, string) {
	if len(data) == 0 {
		return 0, "empty"
	}
	return data[0], fsm.CommandType(data[0]).String()
}

func newHalt(index, term uint64, data []byte, err error, detail string) Halt {
	typ, name := commandTypeOf(data)
	return Halt{Index: index, Term: term, CommandType: typ, CommandName: name, SHA256: EntryHash(data),
		Error: err.Error(), Detail: detail, Version: Version, HaltedAt: time.Now().UTC().Format(time.RFC3339)}
}

func (h Halt) String() string {
	return fmt.Sprintf("log entry %d (term %d, command type %d %s, sha256 %s): %s",
		h.Index, h.Term, h.CommandType, h.CommandName, h.SHA256, h.Error)
}

// ReadHalt returns the marker a halted node left in dataDir, if any.
func ReadHalt(dataDir string) (Halt, bool, error) {
	var h Halt
	ok, err := readJSONFile(filepath.Join(dataDir, haltFile), &h)
	return h, ok, err
}

func writeHalt(dataDir string, h Halt) error {
	return writeJSONFile(filepath.Join(dataDir, haltFile), h, 0o640)
}

// ReadSkips returns the skip decisions recorded in dataDir.
func ReadSkips(dataDir string) ([]Skip, error) {
	var s []Skip
	_, err := readJSONFile(filepath.Join(dataDir, skipFile), &s)
	return s, err
}

// SkipEntry records the decision to apply the entry at index, whose data
// hashes to sha, as a no-op, and clears a halt on that entry. Every node
// must be given the same decision before it applies that index.
func SkipEntry(dataDir string, index uint64, sha string) error {
	skips, err := ReadSkips(dataDir)
	if err != nil {
		return err
	}
	for _, s := range skips {
		if s.Index == index && s.SHA256 != sha {
			return fmt.Errorf("entry %d already has a skip decision for sha256 %s", index, s.SHA256)
		}
	}
	if err := writeJSONFile(filepath.Join(dataDir, skipFile), append(skips, Skip{Index: index, SHA256: sha}), 0o640); err != nil {
		return err
	}
	h, ok, err := ReadHalt(dataDir)
	if err != nil || !ok || h.Index != index || h.SHA256 != sha {
		return err
	}
	return os.Remove(filepath.Join(dataDir, haltFile))
}

func skipMap(skips []Skip) map[uint64]string {
	m := make(map[uint64]string, len(skips))
	for _, s := range skips {
		m[s.Index] = s.SHA256
	}
	return m
}

// checkHalt decides whether a node may start: not while it halted on an
// entry under this same version and nobody decided about that entry. A
// new version may be able to apply it, so it gets to try.
func checkHalt(dataDir string, skips []Skip) (resumed *Halt, err error) {
	h, ok, err := ReadHalt(dataDir)
	if err != nil || !ok {
		return nil, err
	}
	if skipMap(skips)[h.Index] != h.SHA256 && h.Version == Version {
		return nil, fmt.Errorf("%w: %s. Inspect it with 'raftcat log show --data-dir %s', then skip it on every node "+
			"with 'raftcat log skip' or restore a backup (docs/operations.md#a-log-entry-that-cannot-be-applied)",
			ErrHalted, h, dataDir)
	}
	return &h, os.Remove(filepath.Join(dataDir, haltFile))
}

func readJSONFile(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return true, nil
}

// writeJSONFile replaces path atomically and durably; a new file gets
// the permissions perm.
func writeJSONFile(path string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := writeSynced(tmp, append(b, '\n'), perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return raftlog.SyncDir(filepath.Dir(path))
}

func writeSynced(path string, b []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// loadSkips reads the operator's skip decisions into the machine and
// refuses to start a node still halted on an undecided entry.
func (n *Node) loadSkips() error {
	skips, err := ReadSkips(n.cfg.DataDir)
	if err != nil {
		return err
	}
	resumed, err := checkHalt(n.cfg.DataDir, skips)
	if err != nil {
		return err
	}
	if resumed != nil {
		n.log.Warn("starting although this node halted on a log entry", "index", resumed.Index,
			"skip_decided", skipMap(skips)[resumed.Index] == resumed.SHA256, "halted_version", resumed.Version, "version", Version)
	}
	if len(skips) > 0 {
		n.log.Info("operator skip decisions loaded", "entries", len(skips))
	}
	n.machine.SetSkips(skipMap(skips))
	return nil
}

// Halted is closed when the node halts on a log entry it cannot apply.
// A process should then exit: the node no longer applies anything.
func (n *Node) Halted() <-chan struct{} { return n.fsm.haltCh }

// HaltInfo describes the entry the node halted on.
func (n *Node) HaltInfo() (Halt, bool) { return n.fsm.Halted() }
