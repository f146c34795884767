package bench

import (
	"encoding/json"
	"testing"
)

// The append a writer sends: the first on an empty table asserts no
// snapshot and has no parent; later ones assert and name the loaded
// snapshot and expire its parent.
func TestIcebergAppendBody(t *testing.T) {
	type body struct {
		Requirements []struct {
			Type, Ref  string
			SnapshotID *int64 `json:"snapshot-id"`
		}
		Updates []map[string]json.RawMessage
	}
	parse := func(h icebergHead) body {
		var b body
		if err := json.Unmarshal(icebergAppend(`{"namespace":["bench"],"name":"t"}`, h, 7, 1000), &b); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		return b
	}
	first := parse(icebergHead{Location: "file:///w/t"})
	if len(first.Requirements) != 1 || first.Requirements[0].Type != "assert-ref-snapshot-id" ||
		first.Requirements[0].SnapshotID != nil || len(first.Updates) != 2 {
		t.Fatalf("first append: %+v", first)
	}
	if _, ok := first.Updates[0]["snapshot"]; !ok {
		t.Fatalf("no snapshot in %s", first.Updates[0])
	}
	next := parse(icebergHead{ID: 5, Parent: 4, HasParent: true, Sequence: 2, Location: "file:///w/t"})
	if r := next.Requirements[0]; r.SnapshotID == nil || *r.SnapshotID != 5 || len(next.Updates) != 3 {
		t.Fatalf("next append: %+v", next)
	}
	var snap struct {
		ID       int64  `json:"snapshot-id"`
		Parent   int64  `json:"parent-snapshot-id"`
		Sequence int64  `json:"sequence-number"`
		List     string `json:"manifest-list"`
	}
	if err := json.Unmarshal(next.Updates[0]["snapshot"], &snap); err != nil || snap.ID != 7 || snap.Parent != 5 ||
		snap.Sequence != 3 || snap.List != "file:///w/t/metadata/snap-7.avro" {
		t.Fatalf("snapshot %+v (%v)", snap, err)
	}
	if string(next.Updates[2]["action"]) != `"remove-snapshots"` || string(next.Updates[2]["snapshot-ids"]) != "[4]" {
		t.Fatalf("expiry %s", next.Updates[2])
	}
}
