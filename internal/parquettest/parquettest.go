// Package parquettest reads small Parquet files in tests: the row count
// from the footer, and the values of one top-level column as strings. It
// lets end-to-end tests check data files they download through URLs
// without a query engine.
package parquettest

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Rows returns the row count recorded in the file's footer.
func Rows(data []byte) (int64, error) {
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("parquettest: open: %w", err)
	}
	defer rdr.Close()
	return rdr.NumRows(), nil
}

// StringColumn returns every value of the top-level column named column,
// in row order, each formatted by Arrow's ValueStr ("" for null).
func StringColumn(data []byte, column string) ([]string, error) {
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parquettest: open: %w", err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("parquettest: %w", err)
	}
	leaves, err := columnLeaves(fr, column)
	if err != nil {
		return nil, err
	}
	return readStrings(fr, leaves)
}

// columnLeaves lists the leaf column indices below the top-level field.
func columnLeaves(fr *pqarrow.FileReader, column string) ([]int, error) {
	for i := range fr.Manifest.Fields {
		f := &fr.Manifest.Fields[i]
		if f.Field.Name == column {
			return appendLeaves(nil, f), nil
		}
	}
	return nil, fmt.Errorf("parquettest: no column %q", column)
}

func appendLeaves(dst []int, f *pqarrow.SchemaField) []int {
	if f.IsLeaf() {
		return append(dst, f.ColIndex)
	}
	for i := range f.Children {
		dst = appendLeaves(dst, &f.Children[i])
	}
	return dst
}

// readStrings formats every value of the (single) selected field.
func readStrings(fr *pqarrow.FileReader, leaves []int) ([]string, error) {
	if fr.ParquetReader().NumRows() == 0 {
		return []string{}, nil
	}
	rr, err := fr.GetRecordReader(context.Background(), leaves, nil)
	if err != nil {
		return nil, fmt.Errorf("parquettest: %w", err)
	}
	defer rr.Release()
	out := []string{}
	for rr.Next() {
		out = appendValues(out, rr.RecordBatch().Column(0))
	}
	if err := rr.Err(); err != nil {
		return nil, fmt.Errorf("parquettest: %w", err)
	}
	return out, nil
}

func appendValues(out []string, col arrow.Array) []string {
	for i := 0; i < col.Len(); i++ {
		if col.IsNull(i) {
			out = append(out, "")
			continue
		}
		out = append(out, strings.Clone(col.ValueStr(i))) // may alias Arrow's buffer
	}
	return out
}
