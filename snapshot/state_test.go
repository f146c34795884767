package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// smallState builds a state with one of every record kind.
func smallState(t *testing.T) *fsm.State {
	t.Helper()
	m := fsm.NewMachine()
	cmds := []fsm.Command{
		&fsm.Init{Stamp: fsm.Stamp{Time: 1}, MetastoreID: "ms", StorageRoot: "s3://root", CatalogID: "c1", SchemaID: "s1"},
		&fsm.CreateCatalog{Stamp: fsm.Stamp{Time: 2}, ID: "c2", Name: "other", Properties: map[string]string{"a": "b"}},
		&fsm.CreateStagingTable{Stamp: fsm.Stamp{Time: 3}, ID: "t1", CatalogName: "unity", SchemaName: "default", Name: "t"},
		&fsm.CreateStagingTable{Stamp: fsm.Stamp{Time: 4}, ID: "t2", CatalogName: "unity", SchemaName: "default", Name: "u"},
		&fsm.CreateTable{Stamp: fsm.Stamp{Time: 5}, ID: "x1", CatalogName: "unity", SchemaName: "default", Name: "ext",
			Format: fsm.FormatDelta, TableType: fsm.TableExternal, Location: "s3://ext",
			Properties: map[string]string{"k": "v"}},
	}
	for i, c := range cmds {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Apply(uint64(i+1), b)
		if err != nil || res.Err != nil {
			t.Fatalf("apply %T: %v %v", c, err, res.Err)
		}
	}
	return m.State()
}

func stateBytes(t *testing.T, st *fsm.State, h Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteState(&buf, st, h); err != nil {
		t.Fatalf("WriteState: %v", err)
	}
	return buf.Bytes()
}

func TestStateRoundTrip(t *testing.T) {
	h := Header{Index: 5, Term: 2, Meta: map[string]string{"node": "n1"}}
	for _, st := range []*fsm.State{fsm.NewState(), smallState(t)} {
		data := stateBytes(t, st, h)
		got, hdr, err := ReadState(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("ReadState: %v", err)
		}
		if hdr.Index != 5 || hdr.Term != 2 || hdr.Meta["node"] != "n1" || hdr.Version != FormatVersion {
			t.Fatalf("header = %+v", hdr)
		}
		if got.Initialized() != st.Initialized() {
			t.Fatalf("initialised %v, want %v", got.Initialized(), st.Initialized())
		}
		if again := stateBytes(t, got, h); !bytes.Equal(again, data) {
			t.Fatal("restored state serialises differently")
		}
	}
	_, counts, err := Verify(bytes.NewReader(stateBytes(t, smallState(t), h)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[byte]int{fsm.RecordMetastore: 1, fsm.RecordCatalog: 2, fsm.RecordSchema: 1, fsm.RecordTable: 1, fsm.RecordStaging: 2}
	for k, n := range want {
		if counts[k] != n {
			t.Fatalf("record counts = %v, want %v", counts, want)
		}
	}
}

// Restoring does not depend on record order, and re-serialising yields
// the canonical order.
func TestReadStateCanonicalises(t *testing.T) {
	h := Header{Index: 9, Term: 1}
	canonical := stateBytes(t, smallState(t), h)
	_, recs, err := readAll(bytes.NewReader(canonical))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		st, _, err := ReadState(bytes.NewReader(encode(t, h, recs)))
		if err != nil {
			t.Fatalf("ReadState of shuffled records: %v", err)
		}
		if got := stateBytes(t, st, h); !bytes.Equal(got, canonical) {
			t.Fatal("shuffled records restore to a different state")
		}
		if s, ok := st.StagingByLocation("s3://root/__unitystorage/tables/t2"); !ok || s.ID != "t2" {
			t.Fatalf("staging location index not rebuilt: %+v, %v", s, ok)
		}
	}
}

func TestReadStateRejects(t *testing.T) {
	h := Header{Index: 1, Term: 1}
	good := stateBytes(t, smallState(t), h)
	cases := []struct {
		name string
		data []byte
	}{
		{"unknown record kind", encode(t, h, []record{{kind: 42, payload: []byte(`{}`)}})},
		{"table record not JSON", encode(t, h, []record{{kind: fsm.RecordTable, payload: []byte("not json")}})},
		{"catalog record wrong shape", encode(t, h, []record{{kind: fsm.RecordCatalog, payload: []byte(`[1]`)}})},
		{"truncated", good[:len(good)-5]},
		{"bit flip", func() []byte { b := bytes.Clone(good); b[len(b)/2] ^= 0x10; return b }()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _, err := ReadState(bytes.NewReader(tc.data))
			if err == nil {
				t.Fatal("ReadState accepted it")
			}
			if st != nil {
				t.Fatal("ReadState returned a state along with an error")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
}

// manyTablesState holds enough records that reading it spans many
// decode chunks.
func manyTablesState(t *testing.T, n int) *fsm.State {
	t.Helper()
	m := fsm.NewMachine()
	apply := func(i int, c fsm.Command) {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := m.Apply(uint64(i), b); err != nil || res.Err != nil {
			t.Fatalf("apply %T: %v %v", c, err, res.Err)
		}
	}
	apply(1, &fsm.Init{Stamp: fsm.Stamp{Time: 1}, MetastoreID: "ms", StorageRoot: "s3://root", CatalogID: "c1", SchemaID: "s1"})
	for i := 0; i < n; i++ {
		apply(2+i, &fsm.CreateTable{Stamp: fsm.Stamp{Time: 2}, ID: fmt.Sprintf("x%05d", i), CatalogName: "unity",
			SchemaName: "default", Name: fmt.Sprintf("t%05d", i), Format: fsm.FormatDelta, TableType: fsm.TableExternal,
			Location: fmt.Sprintf("s3://ext/%d", i), Properties: map[string]string{"k": fmt.Sprint(i)}})
	}
	return m.State()
}

// TestReadStateAcrossChunksKeepsOrderAndRejectsLateCorruption reads a
// state of many records (decoded in parallel chunks) back byte-identical,
// and refuses one whose corrupt record sits far into the stream.
func TestReadStateAcrossChunksKeepsOrderAndRejectsLateCorruption(t *testing.T) {
	st := manyTablesState(t, 5*chunkRecords+17)
	data := stateBytes(t, st, Header{Index: 9})
	got, _, err := ReadState(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stateBytes(t, got, Header{Index: 9}), data) || got.Digest() != st.Digest() {
		t.Fatal("state read back differs from the state written")
	}

	// A record that is valid framing but not a table, near the end.
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Index: 9})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := st.WriteRecords(func(kind byte, payload []byte) error {
		n++
		if n == 4*chunkRecords+3 {
			payload = []byte(`{"id": 12`) // truncated JSON
		}
		return w.WriteRecord(kind, payload)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadState(bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("late corrupt record: err = %v, want ErrCorrupt", err)
	}
}

// asVersion1 rewrites a stream's version (prefix and header) to 1.
func asVersion1(t *testing.T, data []byte) []byte {
	t.Helper()
	b := bytes.Clone(data)
	binary.BigEndian.PutUint16(b[8:], 1)
	i := bytes.Index(b, []byte(`"version":2`))
	if i < 0 {
		t.Fatal("no header version")
	}
	b[i+len(`"version":`)] = '1'
	return fixChecksum(b)
}

// A version 1 stream (release 2fa8555 and before) is read with record
// layout 1, where a table's commit log sits at the top level of its record;
// the same records in a version 2 stream are read with layout 2.
func TestReadsVersion1Streams(t *testing.T) {
	h := Header{Index: 9, Term: 2}
	recs := []record{
		{fsm.RecordMetastore, []byte(`{"id":"ms","storage_root":"s3://root","created_at":1}`)},
		{fsm.RecordCatalog, []byte(`{"id":"c1","name":"unity","created_at":1,"updated_at":1}`)},
		{fsm.RecordSchema, []byte(`{"id":"s1","catalog_name":"unity","name":"default","created_at":1,"updated_at":1}`)},
		{fsm.RecordTable, []byte(`{"id":"t1","catalog_name":"unity","schema_name":"default","name":"t","format":"DELTA",` +
			`"type":"MANAGED","location":"s3://root/t1","uniform":{"metadata_location":"s3://root/t1/m.json",` +
			`"converted_delta_version":2,"converted_delta_timestamp":5},"created_at":1,"updated_at":1,"meta_index":4,` +
			`"commits":[{"version":1,"timestamp":2,"file_name":"1.json","file_size":3,"file_modification_timestamp":4},` +
			`{"version":2,"timestamp":3,"file_name":"2.json","file_size":3,"file_modification_timestamp":4}]}`)},
	}
	v2 := encode(t, h, recs)
	st, hdr, err := ReadState(bytes.NewReader(asVersion1(t, v2)))
	if err != nil {
		t.Fatalf("version 1 stream: %v", err)
	}
	tb, ok := st.Table("unity", "default", "t")
	if hdr.Version != 1 || !ok || tb.LatestVersion() != 2 || len(tb.Commits) != 2 || tb.Uniform == nil || tb.Uniform.ConvertedDeltaVersion != 2 {
		t.Fatalf("version 1 table = %+v (header %+v)", tb, hdr)
	}
	st, _, err = ReadState(bytes.NewReader(v2))
	if err != nil {
		t.Fatal(err)
	}
	if tb, _ := st.Table("unity", "default", "t"); len(tb.Commits) != 0 || tb.Uniform != nil {
		t.Fatalf("layout 2 read top-level Delta fields: %+v", tb)
	}
	// Written again, the state is a version 2 stream that reads the same.
	again := stateBytes(t, mustRead(t, asVersion1(t, v2)), h)
	if st, hdr, err := ReadState(bytes.NewReader(again)); err != nil || hdr.Version != FormatVersion || st.Digest() != mustRead(t, asVersion1(t, v2)).Digest() {
		t.Fatalf("rewritten: %v, header %+v", err, hdr)
	}
}

func mustRead(t *testing.T, data []byte) *fsm.State {
	t.Helper()
	st, _, err := ReadState(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return st
}
