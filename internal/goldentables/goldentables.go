// Package goldentables gives tests the real Delta tables of the
// repository's testdata/delta (described in its README) and the row count
// of each at every version.
package goldentables

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Rows is the README's row count of each table at every version: the sum
// over the live files of stats.numRecords (the Parquet footer's count
// where a table has no stats), minus deletion-vector cardinality.
var Rows = map[string][]int64{
	"simple_table":                             {5, 20, 5, 5, 3},
	"delta-0.8.0-partitioned":                  {7},
	"basic-with-inserts-deletes-checkpoint":    {10, 20, 30, 40, 50, 45, 40, 35, 30, 25, 35, 45, 55, 41},
	"checkpoint-v2-table":                      {0, 10, 11, 21, 22, 22, 32, 33, 43, 44},
	"v2-checkpoint-parquet":                    {0, 0, 10},
	"kernel-pagination-multi-part-checkpoints": {1800, 1900, 2000},
	"basic-dv-no-checkpoint":                   {10, 8},
	"dv-with-columnmapping":                    {50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35},
	"table_with_column_mapping":                {5},
	"cdf-table":                                {10, 10, 10, 9},
	"log-replay-latest-metadata-protocol":      {20, 40, 40},
	"cdc_ict_table":                            {0, 4, 2, 2},
}

// Dir is the absolute path of testdata/delta.
func Dir(t testing.TB) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("goldentables: cannot locate the repository")
	}
	dir := filepath.Join(filepath.Dir(self), "..", "..", "testdata", "delta")
	if _, err := os.Stat(filepath.Join(dir, "simple_table", "_delta_log")); err != nil {
		t.Fatalf("goldentables: the Delta test tables are not at %s: %v", dir, err)
	}
	return dir
}

// URL is the file:// URL of a directory.
func URL(dir string) string { return "file://" + filepath.ToSlash(dir) }

// Copy copies a table into a fresh temporary directory, keeping its
// files' modification times (commit timestamps derive from them), and
// returns that directory.
func Copy(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join(Dir(t), name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, raw, 0o644); err != nil {
			return err
		}
		return os.Chtimes(target, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatalf("goldentables: copy %s: %v", name, err)
	}
	return dst
}
