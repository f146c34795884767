package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
)

// scaleCatalog is the catalog Init creates; every bench schema lives in it.
const scaleCatalog = fsm.DefaultCatalog

// scaleBaseTime is the builder's clock origin, fixed so that equal sizes
// give byte-identical snapshots.
const scaleBaseTime = int64(1_700_000_000_000)

// scaleColumns is the schema of every bench table, sent through the same
// parser and canonical encoding as a Delta API create.
const scaleColumns = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"event_time","type":"timestamp","nullable":false,"metadata":{}},` +
	`{"name":"user_id","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"country","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"amount","type":"decimal(18,2)","nullable":true,"metadata":{}},` +
	`{"name":"payload","type":"string","nullable":true,"metadata":{"comment":"raw event"}}]}`

// scaleSchemaName and scaleTableName name the i-th schema and table; table
// i lives in schema i mod schemas.
func scaleSchemaName(i int) string { return fmt.Sprintf("s%05d", i) }
func scaleTableName(i int) string  { return fmt.Sprintf("t%08d", i) }

// scaleTableID is table i's uuid: deterministic, so runs are comparable.
func scaleTableID(i int) string { return fmt.Sprintf("5ca1e000-0000-4000-8000-%012x", i) }

// scaleCommitFile is the staged commit file name of version v.
func scaleCommitFile(v int64, id string) string { return fmt.Sprintf("%020d.%s.json", v, id) }

// scaleBuilder builds a catalog state in process by applying encoded
// commands to a Machine at consecutive raft indexes, exactly as the raft
// apply loop does on every replica.
type scaleBuilder struct {
	m       *fsm.Machine
	index   uint64
	clock   int64
	columns fsm.ColumnsSpec
}

func newScaleBuilder(storageRoot string) (*scaleBuilder, error) {
	cols, err := deltaschema.Parse("columns", json.RawMessage(scaleColumns))
	if err != nil {
		return nil, fmt.Errorf("bench columns: %w", err)
	}
	b := &scaleBuilder{m: fsm.NewMachine(), clock: scaleBaseTime,
		columns: fsm.ColumnsSpec{Columns: cols.Canonical(), Names: cols.TopLevelNames()}}
	_, err = b.apply(&fsm.Init{Stamp: b.stamp(), MetastoreID: "5ca1e000-0000-4000-8000-metastore000",
		StorageRoot: storageRoot, CatalogID: "5ca1e000-0000-4000-8000-catalog00000", SchemaID: "5ca1e000-0000-4000-8000-schema000000"})
	return b, err
}

func (b *scaleBuilder) stamp() fsm.Stamp {
	b.clock++
	return fsm.Stamp{Time: b.clock}
}

// apply encodes cmd and applies it at the next index; a rejected or
// no-op command is an error, since every bench command must change state.
func (b *scaleBuilder) apply(cmd fsm.Command) (fsm.Result, error) {
	data, err := fsm.Encode(cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	b.index++
	res, err := b.m.Apply(b.index, data)
	if err != nil {
		return res, err
	}
	if res.Err != nil {
		return res, fmt.Errorf("apply %T at index %d: %s: %s", cmd, b.index, res.Err.Code, res.Err.Message)
	}
	if res.NoOp {
		return res, fmt.Errorf("apply %T at index %d: unexpected no-op", cmd, b.index)
	}
	return res, nil
}

func (b *scaleBuilder) createSchemas(n int) error {
	for i := 0; i < n; i++ {
		if _, err := b.apply(&fsm.CreateSchema{Stamp: b.stamp(), ID: fmt.Sprintf("5ca1e000-0000-4000-8001-%012x", i),
			CatalogName: scaleCatalog, Name: scaleSchemaName(i)}); err != nil {
			return err
		}
	}
	return nil
}

// addTable stages and creates managed table i with the managed-table
// contract, then ratifies versions 1..commits, each reporting the one
// before it as backfilled so the tracked log stays at one commit.
func (b *scaleBuilder) addTable(i, schemas, commits int) error {
	id, schema, name := scaleTableID(i), scaleSchemaName(i%schemas), scaleTableName(i)
	res, err := b.apply(&fsm.CreateStagingTable{Stamp: b.stamp(), ID: id, CatalogName: scaleCatalog,
		SchemaName: schema, Name: name})
	if err != nil {
		return err
	}
	props := map[string]string{fsm.PropTableID: id}
	for _, kv := range fsm.ManagedProperties {
		props[kv[0]] = kv[1]
	}
	create := &fsm.CreateTable{Stamp: b.stamp(), CatalogName: scaleCatalog, SchemaName: schema, Name: name,
		Format: fsm.FormatDelta, TableType: fsm.TableManaged, Location: res.Staging.Location, Columns: b.columns,
		Protocol: fsm.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: fsm.ManagedReaderFeatures, WriterFeatures: fsm.ManagedWriterFeatures},
		Properties: props, LastCommitTimestampMs: b.clock}
	if _, err := b.apply(create); err != nil {
		return err
	}
	for v := int64(1); v <= int64(commits); v++ {
		st := b.stamp()
		up := &fsm.UpdateTable{Stamp: st, CatalogName: scaleCatalog, SchemaName: schema, Name: name, AssertUUID: id,
			AddCommit: &fsm.AddCommit{Commit: fsm.Commit{Version: v, Timestamp: st.Time, FileName: scaleCommitFile(v, id),
				FileSize: 4096 + v, FileModTime: st.Time}}}
		if v > 1 {
			prev := v - 1
			up.SetLatestBackfilled = &prev
		}
		if _, err := b.apply(up); err != nil {
			return err
		}
	}
	return nil
}

// scaleBuild is what building a state measured.
type scaleBuild struct {
	state     *fsm.State
	index     uint64 // raft index of the last command
	commands  uint64
	elapsed   time.Duration
	heapBytes uint64 // live heap the state added
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// buildScaleState applies Init, the schemas, and every table's create and
// commits, logging progress now and then.
func buildScaleState(storageRoot string, tables, schemas, commits int, progress func(done int, elapsed time.Duration)) (scaleBuild, error) {
	debug.FreeOSMemory()
	before := liveHeap()
	// Marking a heap that grows to millions of tables costs a third of the
	// build's CPU at the default GOGC; collect less often while building,
	// within a memory cap.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(scaleBuildMemoryLimit()))
	start := time.Now()
	b, err := newScaleBuilder(storageRoot)
	if err != nil {
		return scaleBuild{}, err
	}
	if err := b.createSchemas(schemas); err != nil {
		return scaleBuild{}, err
	}
	last := time.Now()
	for i := 0; i < tables; i++ {
		if err := b.addTable(i, schemas, commits); err != nil {
			return scaleBuild{}, err
		}
		if progress != nil && time.Since(last) > 10*time.Second {
			last = time.Now()
			progress(i+1, time.Since(start))
		}
	}
	elapsed := time.Since(start)
	st := b.m.State()
	after := liveHeap()
	runtime.KeepAlive(st)
	out := scaleBuild{state: st, index: b.index, commands: b.index, elapsed: elapsed}
	if after > before {
		out.heapBytes = after - before
	}
	return out, nil
}

// scaleBuildMemoryLimit is the heap the builder may grow to before it
// collects regardless of GOGC: 40% of this machine's memory.
func scaleBuildMemoryLimit() int64 {
	if total := scaleMemTotal(); total > 0 {
		return total / 10 * 4
	}
	return 4 << 30
}

// scaleMemTotal is the machine's memory in bytes (0 if unknown).
func scaleMemTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return scaleKB(string(b), "MemTotal:")
}
