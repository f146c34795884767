package sharing

import (
	"encoding/json"
	"strings"

	"github.com/raftcat/raftcat/deltalog"
)

// snapshotFileLine is a file of a snapshot answer. Time-travel answers
// name the snapshot's version and timestamp on every file.
func snapshotFileLine(sign *urlSigner, tr *tableRequest, f *deltalog.AddFile, delta, travel bool, snap *deltalog.Snapshot) (any, error) {
	var v, ts *int64
	if travel {
		v, ts = ptr(snap.Version), ptr(snap.Timestamp)
	}
	if delta {
		add, err := signedAdd(sign, tr, f)
		if err != nil {
			return nil, err
		}
		return map[string]deltaFile{"file": {ID: fileID(f.Key(), true), DeltaSingleAction: deltaSingleAction{Add: add},
			Version: v, Timestamp: ts, ExpirationTimestamp: sign.expires.UnixMilli()}}, nil
	}
	pf, err := parquetFileOf(sign, tr, f.Path, f.Key(), f.PartitionValues, f.Size, f.Stats)
	if err != nil {
		return nil, err
	}
	pf.Version, pf.Timestamp = v, ts
	return map[string]parquetFile{"file": pf}, nil
}

func parquetFileOf(sign *urlSigner, tr *tableRequest, path, key string, pv map[string]*string, size int64, stats string) (parquetFile, error) {
	u, err := sign.sign(tr.log.FileLocation(path))
	if err != nil {
		return parquetFile{}, err
	}
	if pv == nil {
		pv = map[string]*string{}
	}
	return parquetFile{URL: u, ID: fileID(key, false), PartitionValues: pv, Size: size, Stats: stats,
		ExpirationTimestamp: sign.expires.UnixMilli()}, nil
}

// signedAdd is an add action whose path, and deletion vector file, are
// signed URLs.
func signedAdd(sign *urlSigner, tr *tableRequest, f *deltalog.AddFile) (*deltalog.AddFile, error) {
	add := *f
	u, err := sign.sign(tr.log.FileLocation(f.Path))
	if err != nil {
		return nil, err
	}
	add.Path = u
	add.DeletionVector, err = signedDV(sign, tr, f.DeletionVector)
	return &add, err
}

func signedRemove(sign *urlSigner, tr *tableRequest, r *deltalog.RemoveFile) (*deltalog.RemoveFile, error) {
	rm := *r
	u, err := sign.sign(tr.log.FileLocation(r.Path))
	if err != nil {
		return nil, err
	}
	rm.Path = u
	rm.DeletionVector, err = signedDV(sign, tr, r.DeletionVector)
	return &rm, err
}

// signedDV points a deletion vector stored in a file at a signed URL
// (storage type "p"); inline vectors pass as they are.
func signedDV(sign *urlSigner, tr *tableRequest, dv *deltalog.DeletionVector) (*deltalog.DeletionVector, error) {
	if dv == nil {
		return nil, nil
	}
	loc, ok := dv.FileLocation(tr.table.Location)
	if !ok {
		return dv, nil
	}
	u, err := sign.sign(loc)
	if err != nil {
		return nil, err
	}
	out := *dv
	out.StorageType, out.PathOrInlineDv = "p", u
	return &out, nil
}

// hintColumns describes the table's top-level columns for predicate
// hints: physical names under column mapping, types, partitioning.
func hintColumns(m *deltalog.Metadata) map[string]hintColumn {
	var schema struct {
		Fields []struct {
			Name     string          `json:"name"`
			Type     json.RawMessage `json:"type"`
			Metadata map[string]any  `json:"metadata"`
		} `json:"fields"`
	}
	if json.Unmarshal([]byte(m.SchemaString), &schema) != nil {
		return nil
	}
	mapped := strings.ToLower(m.Configuration["delta.columnMapping.mode"])
	out := map[string]hintColumn{}
	for _, f := range schema.Fields {
		col := hintColumn{Physical: f.Name, Partition: containsFold(m.PartitionColumns, f.Name)}
		_ = json.Unmarshal(f.Type, &col.Type) // nested types stay ""
		if phys, ok := f.Metadata["delta.columnMapping.physicalName"].(string); ok && mapped != "" && mapped != "none" {
			col.Physical = phys
		}
		out[f.Name] = col
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
