package deltalog

import (
	"bytes"
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// parquetBatchRows bounds the rows decoded at once from a checkpoint.
const parquetBatchRows = 64 << 10

// checkpointPart is what one checkpoint (or sidecar) file contributes.
type checkpointPart struct {
	adds     []*AddFile
	metadata *Metadata
	protocol *Protocol
	sidecars []string // sidecar paths, as written
}

// readParquetActions decodes the add, metaData, protocol and sidecar
// columns of a checkpoint or sidecar Parquet file. Remove rows are
// tombstones and parsed statistics (stats_parsed, partitionValues_parsed)
// are not needed, so neither is read.
func readParquetActions(ctx context.Context, data []byte) (*checkpointPart, error) {
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	leaves := wantedLeaves(rdr.MetaData().Schema)
	out := &checkpointPart{}
	if len(leaves) == 0 || rdr.NumRows() == 0 {
		return out, nil
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: parquetBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	return out, readBatches(ctx, fr, leaves, out)
}

// readBatches decodes every record batch of the selected leaves into out.
func readBatches(ctx context.Context, fr *pqarrow.FileReader, leaves []int, out *checkpointPart) error {
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		out.addBatch(rr.RecordBatch())
	}
	return rr.Err()
}

// wantedLeaves selects the leaf columns this package reads.
func wantedLeaves(sc *schema.Schema) []int {
	var out []int
	for i := 0; i < sc.NumColumns(); i++ {
		if wantLeaf(sc.Column(i).ColumnPath()) {
			out = append(out, i)
		}
	}
	return out
}

func wantLeaf(path []string) bool {
	switch path[0] {
	case "metaData", "protocol", "sidecar":
		return true
	case "add":
		return len(path) < 2 || (path[1] != "stats_parsed" && path[1] != "partitionValues_parsed")
	}
	return false
}

// addBatch converts the action rows of one record batch.
func (p *checkpointPart) addBatch(rec arrow.RecordBatch) {
	cols := map[string]*structView{}
	for i, f := range rec.Schema().Fields() {
		cols[f.Name] = newStructView(rec.Column(i))
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		p.addRow(cols, i)
	}
}

func (p *checkpointPart) addRow(cols map[string]*structView, i int) {
	if add := cols["add"]; add.valid(i) {
		p.adds = append(p.adds, addFromArrow(add, i))
	}
	if md := cols["metaData"]; md.valid(i) {
		p.metadata = metadataFromArrow(md, i)
	}
	if pr := cols["protocol"]; pr.valid(i) {
		p.protocol = protocolFromArrow(pr, i)
	}
	if sc := cols["sidecar"]; sc.valid(i) {
		p.sidecars = append(p.sidecars, sc.str("path", i))
	}
}

func addFromArrow(s *structView, i int) *AddFile {
	a := &AddFile{
		Path:                    s.str("path", i),
		PartitionValues:         nullableStrMap(s.child("partitionValues"), i),
		DataChange:              s.boolean("dataChange", i),
		Stats:                   s.str("stats", i),
		Tags:                    strMap(s.child("tags"), i),
		DeletionVector:          dvFromArrow(s.sub("deletionVector"), i),
		BaseRowID:               s.optI64("baseRowId", i),
		DefaultRowCommitVersion: s.optI64("defaultRowCommitVersion", i),
		ClusteringProvider:      s.str("clusteringProvider", i),
	}
	a.Size, _ = s.i64("size", i)
	a.ModificationTime, _ = s.i64("modificationTime", i)
	a.normalize()
	return a
}

func dvFromArrow(s *structView, i int) *DeletionVector {
	if !s.valid(i) {
		return nil
	}
	d := &DeletionVector{StorageType: s.str("storageType", i), PathOrInlineDv: s.str("pathOrInlineDv", i)}
	if off, ok := s.i64("offset", i); ok {
		o := int32(off)
		d.Offset = &o
	}
	size, _ := s.i64("sizeInBytes", i)
	d.SizeInBytes = int32(size)
	d.Cardinality, _ = s.i64("cardinality", i)
	return d
}

func metadataFromArrow(s *structView, i int) *Metadata {
	m := &Metadata{
		ID:               s.str("id", i),
		Name:             s.str("name", i),
		Description:      s.str("description", i),
		SchemaString:     s.str("schemaString", i),
		PartitionColumns: strListAt(s.child("partitionColumns"), i),
		Configuration:    strMap(s.child("configuration"), i),
		CreatedTime:      s.optI64("createdTime", i),
	}
	if f := s.sub("format"); f.valid(i) {
		m.Format = Format{Provider: f.str("provider", i), Options: strMap(f.child("options"), i)}
	}
	m.normalize()
	return m
}

func protocolFromArrow(s *structView, i int) *Protocol {
	r, _ := s.i64("minReaderVersion", i)
	w, _ := s.i64("minWriterVersion", i)
	return &Protocol{
		MinReaderVersion: int(r),
		MinWriterVersion: int(w),
		ReaderFeatures:   strListAt(s.child("readerFeatures"), i),
		WriterFeatures:   strListAt(s.child("writerFeatures"), i),
	}
}
