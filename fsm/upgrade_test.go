package fsm_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

// The fixtures under testdata/upgrade were written by release 2fa8555 (see
// the README there): a log of encoded commands with the result each one
// produced, and a backup with the state it held. This release must apply
// and restore them to the very same answers.

type recordedEntry struct {
	Index  uint64          `json:"index"`
	Type   int             `json:"type"`
	Entry  string          `json:"entry"`
	Result json.RawMessage `json:"result"`
}

type recordedLog struct {
	Entries    []recordedEntry `json:"entries"`
	StagingIDs []string        `json:"staging_ids"`
	Final      json.RawMessage `json:"final"`
}

type recordedBackup struct {
	StagingIDs []string        `json:"staging_ids"`
	State      json.RawMessage `json:"state"`
	Header     snapshot.Header `json:"header"`
}

func readFixture(t *testing.T, name string, v any) {
	t.Helper()
	f, err := os.Open("testdata/upgrade/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if bytes.HasSuffix([]byte(name), []byte(".gz")) {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	if err := json.NewDecoder(r).Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// sameJSON compares a view with what the old release recorded, as JSON
// values (key order and spacing aside).
func sameJSON(t *testing.T, what string, got any, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(jsonOf(t, got)), &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s differs from the recording:\n got %s\nwant %s", what, jsonOf(t, got), want)
	}
}

func TestBackupOfRelease2fa8555Restores(t *testing.T) {
	var rec recordedBackup
	readFixture(t, "backup-2fa8555.json", &rec)
	raw, err := os.ReadFile("testdata/upgrade/backup-2fa8555.snap")
	if err != nil {
		t.Fatal(err)
	}
	st, hdr, err := snapshot.ReadState(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !reflect.DeepEqual(hdr, rec.Header) {
		t.Fatalf("header = %+v, want %+v", hdr, rec.Header)
	}
	sameJSON(t, "restored state", viewState(st, rec.StagingIDs), rec.State)

	// Written again by this release and read back, it is the same state.
	again, _, err := snapshot.ReadState(bytes.NewReader(writeState(t, st, hdr.Index)))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "rewritten state", viewState(again, rec.StagingIDs), rec.State)

	// The restored managed tables keep their commit logs and rules.
	m := fsm.NewMachine()
	m.Replace(st)
	lines, _ := st.Table("sales", "orders", "lines")
	b, _ := fsm.Encode(&fsm.UpdateTable{CatalogName: "sales", SchemaName: "orders", Name: "lines", AssertUUID: lines.ID,
		AddCommit: &fsm.AddCommit{Commit: commitOf(4, "u")}})
	if res, err := m.Apply(hdr.Index+1, b); err != nil || res.Err == nil || res.Err.Code != fsm.CodeInvalid {
		t.Fatalf("commit without uniform metadata on a UniForm table: %+v, %v", res, err)
	}
	b, _ = fsm.Encode(&fsm.UpdateTable{CatalogName: "unity", SchemaName: "default", Name: "events",
		AddCommit: &fsm.AddCommit{Commit: commitOf(4, "other")}})
	if res, err := m.Apply(hdr.Index+2, b); err != nil || res.Err == nil || res.Err.Code != fsm.CodeCommitVersionConflict {
		t.Fatalf("conflicting commit on the restored table: %+v, %v", res, err)
	}
}
