// Package chaos checks what clients observed while a cluster was under
// faults. A history is every operation one or more clients ran, with its
// invocation and completion times and its outcome; Check decides whether
// each table's history is linearizable (porcupine, with unknown outcomes
// treated as "may or may not have happened") and whether the invariants
// a commit coordinator promises hold: no acknowledged commit lost, no
// version bound to two file names. Delta and Iceberg tables are checked
// alike: an Iceberg table's versions are its snapshots' sequence numbers
// and each version's file is its snapshot id. A transaction across formats
// (ProtocolTransactions) is checked as one commit on its group of three
// tables, whose versions move together (see transactions.go).
package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Operation kinds.
const (
	OpLoad   = "load"   // load a table: observes latest_version and etag
	OpCommit = "commit" // add-commit of version with file_name
	OpUpdate = "update" // metadata update guarded by assert-etag
)

// Outcomes.
const (
	OutcomeOK      = "ok"
	OutcomeFail    = "fail"    // a definite answer that nothing was applied
	OutcomeUnknown = "unknown" // timeout, 5xx, broken connection: may or may not have applied
)

// Protocols a table can be written with.
const (
	ProtocolDelta   = ""        // Delta API: a commit names its version and file
	ProtocolIceberg = "iceberg" // Iceberg REST: a commit adds a snapshot on an asserted base
	// ProtocolTransactions: a commit is one transaction across formats that
	// advances a group's Delta, Iceberg and Lance tables together.
	ProtocolTransactions = "transactions"
)

// Op is one recorded operation (one line of history.jsonl).
type Op struct {
	Protocol   string `json:"protocol,omitempty"`
	Client     int    `json:"client"`
	Table      string `json:"table"`
	Op         string `json:"op"`
	InvokeNs   int64  `json:"invoke_ns"`
	CompleteNs int64  `json:"complete_ns"`
	Outcome    string `json:"outcome"`
	Status     int    `json:"status,omitempty"` // HTTP status of a definite answer
	// Answer is the HTTP status of an answer that left the outcome
	// unknown (a 5xx: 503 without a leader, 507 on a full disk).
	Answer int `json:"answer,omitempty"`

	// commit. An Iceberg commit's version is its snapshot's sequence
	// number, its file name the snapshot id, and Base the snapshot id it
	// asserts is current ("" for a table without a snapshot).
	Version  int64  `json:"version,omitempty"`
	FileName string `json:"file_name,omitempty"`
	Base     string `json:"base,omitempty"`

	// load: what was observed; update: ETag is the asserted etag and
	// NewETag the etag the update answered with.
	LatestVersion int64  `json:"latest_version"` // kept when 0: a load that saw version 0 says so
	Head          string `json:"head,omitempty"` // Iceberg load: the current snapshot id (the latest version's file)
	ETag          string `json:"etag,omitempty"`
	NewETag       string `json:"new_etag,omitempty"`

	// Final marks the loads made after every fault was healed; Commits is
	// then the table's tracked commit log (version -> file name).
	Final   bool             `json:"final,omitempty"`
	Commits map[int64]string `json:"commits,omitempty"`

	// Part, for ProtocolTransactions, is the table of the group a load
	// read (PartDelta, PartIceberg or PartLance), or the operation a
	// refused transaction failed at ("" when the answer named none).
	Part string `json:"part,omitempty"`
	// BadManifests, on the final load of a group's Lance table, are the
	// versions the catalog lists whose manifest is not the one staged for
	// them: version -> what the store holds instead.
	BadManifests map[int64]string `json:"bad_manifests,omitempty"`
}

// ReadHistory reads a JSON-lines history.
func ReadHistory(r io.Reader) ([]Op, error) {
	var ops []Op
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		if err := op.validate(); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		ops = append(ops, op)
	}
	return ops, sc.Err()
}

// WriteHistory writes ops as JSON lines.
func WriteHistory(w io.Writer, ops []Op) error {
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			return err
		}
	}
	return nil
}

func (op Op) validate() error {
	switch op.Op {
	case OpLoad, OpCommit, OpUpdate:
	default:
		return fmt.Errorf("unknown op %q", op.Op)
	}
	switch op.Outcome {
	case OutcomeOK, OutcomeFail, OutcomeUnknown:
	default:
		return fmt.Errorf("unknown outcome %q", op.Outcome)
	}
	if op.Protocol != ProtocolDelta && op.Protocol != ProtocolIceberg && op.Protocol != ProtocolTransactions {
		return fmt.Errorf("unknown protocol %q", op.Protocol)
	}
	if err := op.validatePart(); err != nil {
		return err
	}
	if op.Table == "" {
		return fmt.Errorf("op without a table")
	}
	if op.Outcome != OutcomeUnknown && op.CompleteNs < op.InvokeNs {
		return fmt.Errorf("completes (%d) before it is invoked (%d)", op.CompleteNs, op.InvokeNs)
	}
	return nil
}
