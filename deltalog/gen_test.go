package deltalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// genTable describes a generated table: commits of adds (and a few
// removes) over ten partitions, optionally with a classic checkpoint.
type genTable struct {
	commits    int // versions 0..commits-1
	addsPer    int
	checkpoint int // version of a classic checkpoint, -1 for none
}

// genFile is one add in the generated log.
type genFile struct {
	path  string
	part  string
	rows  int
	dv    bool
	added int
}

// write creates the table under dir and returns the live files at the
// latest version, by path.
func (g genTable) write(t testing.TB, dir string) map[string]genFile {
	t.Helper()
	log := filepath.Join(dir, "_delta_log")
	live := map[string]genFile{}
	for v := 0; v < g.commits; v++ {
		var b strings.Builder
		fmt.Fprintf(&b, `{"commitInfo":{"timestamp":%d,"operation":"WRITE"}}`+"\n", 1_700_000_000_000+v)
		if v == 0 {
			b.WriteString(protocolLine + "\n" + genMetadata + "\n")
		}
		g.writeRemoves(&b, v, live)
		for i := 0; i < g.addsPer; i++ {
			f := genFile{path: fmt.Sprintf("part=p%d/part-%05d-%05d.parquet", i%10, v, i), part: fmt.Sprintf("p%d", i%10), rows: 1 + i%7, dv: i%50 == 3, added: v}
			live[f.path] = f
			b.WriteString(f.addJSON() + "\n")
		}
		writeFile(t, filepath.Join(log, versionName(int64(v))+".json"), b.String())
		if v == g.checkpoint {
			writeCheckpoint(t, filepath.Join(log, versionName(int64(v))+".checkpoint.parquet"), live)
		}
	}
	return live
}

// writeRemoves removes two files of the previous commit.
func (g genTable) writeRemoves(b *strings.Builder, v int, live map[string]genFile) {
	if v == 0 {
		return
	}
	for i := 0; i < 2; i++ {
		p := fmt.Sprintf("part=p%d/part-%05d-%05d.parquet", i%10, v-1, i)
		delete(live, p)
		fmt.Fprintf(b, `{"remove":{"path":%q,"deletionTimestamp":1,"dataChange":true}}`+"\n", p)
	}
}

const genMetadata = `{"metaData":{"id":"gen","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"part\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":["part"],"configuration":{"delta.enableDeletionVectors":"true"},"createdTime":1700000000000}}`

func (f genFile) stats() string {
	return fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":0},"maxValues":{"id":%d},"nullCount":{"id":0}}`, f.rows, f.rows)
}

func (f genFile) dvMap() map[string]any {
	if !f.dv {
		return nil
	}
	return map[string]any{"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36, "cardinality": 1}
}

func (f genFile) addJSON() string {
	add := map[string]any{"path": f.path, "partitionValues": map[string]string{"part": f.part}, "size": 1000 + f.rows,
		"modificationTime": 1_700_000_000_000 + f.added, "dataChange": true, "stats": f.stats()}
	if f.dv {
		add["deletionVector"] = f.dvMap()
	}
	out, _ := json.Marshal(map[string]any{"add": add})
	return string(out)
}

// checkpointSchema is the part of Delta's checkpoint schema the reader
// uses, plus remove tombstones it must ignore.
var checkpointSchema = func() *arrow.Schema {
	str, i64, i32 := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32
	strMap := arrow.MapOf(str, str)
	dv := arrow.StructOf(field("storageType", str), field("pathOrInlineDv", str), field("offset", i32), field("sizeInBytes", i32), field("cardinality", i64))
	add := arrow.StructOf(field("path", str), field("partitionValues", strMap), field("size", i64), field("modificationTime", i64),
		field("dataChange", arrow.FixedWidthTypes.Boolean), field("tags", strMap), field("deletionVector", dv), field("stats", str))
	remove := arrow.StructOf(field("path", str), field("deletionTimestamp", i64), field("dataChange", arrow.FixedWidthTypes.Boolean))
	format := arrow.StructOf(field("provider", str), field("options", strMap))
	md := arrow.StructOf(field("id", str), field("name", str), field("description", str), field("format", format), field("schemaString", str),
		field("partitionColumns", arrow.ListOf(str)), field("configuration", strMap), field("createdTime", i64))
	proto := arrow.StructOf(field("minReaderVersion", i32), field("minWriterVersion", i32), field("readerFeatures", arrow.ListOf(str)), field("writerFeatures", arrow.ListOf(str)))
	return arrow.NewSchema([]arrow.Field{field("add", add), field("remove", remove), field("metaData", md), field("protocol", proto)}, nil)
}()

func field(name string, dt arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: true}
}

// writeCheckpoint writes a classic checkpoint of the live files, through
// Arrow's JSON reader (maps are lists of {key, value}), in row groups of
// 512 rows.
func writeCheckpoint(t testing.TB, path string, live map[string]genFile) {
	t.Helper()
	var rows []map[string]any
	var md, proto map[string]any
	json.Unmarshal([]byte(genMetadata), &md)
	json.Unmarshal([]byte(protocolLine), &proto)
	m := md["metaData"].(map[string]any)
	m["format"] = map[string]any{"provider": "parquet", "options": []any{}}
	m["configuration"] = []any{map[string]any{"key": "delta.enableDeletionVectors", "value": "true"}}
	rows = append(rows, map[string]any{"metaData": m}, proto)
	rows = append(rows, map[string]any{"remove": map[string]any{"path": "gone.parquet", "deletionTimestamp": 1, "dataChange": false}})
	for _, f := range live {
		add := map[string]any{"path": f.path, "partitionValues": []any{map[string]any{"key": "part", "value": f.part}}, "size": 1000 + f.rows,
			"modificationTime": 1_700_000_000_000 + f.added, "dataChange": false, "stats": f.stats()}
		if f.dv {
			add["deletionVector"] = f.dvMap()
		}
		rows = append(rows, map[string]any{"add": add})
	}
	data, _ := json.Marshal(rows)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, checkpointSchema, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var buf bytes.Buffer
	tbl := array.NewTableFromRecords(checkpointSchema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &buf, 512, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
