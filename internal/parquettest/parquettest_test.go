package parquettest_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/raftcat/raftcat/internal/goldentables"
	"github.com/raftcat/raftcat/internal/parquettest"
)

func testdata(t *testing.T, rel string) []byte {
	t.Helper()
	dir := goldentables.Dir(t)
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatalf("test table file: %v", err)
	}
	return data
}

func TestRows(t *testing.T) {
	data := testdata(t, "cdf-table/_change_data/birthday=2023-12-29/cdc-00000-e8760032-5a99-4d37-9739-fc9d4db24308.c000.snappy.parquet")
	n, err := parquettest.Rows(data)
	if err != nil || n != 1 {
		t.Fatalf("Rows = %d, %v; want 1", n, err)
	}
	if _, err := parquettest.Rows([]byte("not parquet")); err == nil {
		t.Fatal("Rows of garbage succeeded")
	}
}

func TestStringColumn(t *testing.T) {
	// cdc_ict_table v3 (UPDATE): two change files with 2 pre- and 2
	// post-images between them.
	var all []string
	for _, f := range []string{
		"birthyear=1986/cdc-00000-c152e2a0-72eb-4ee8-b81e-e0a0c44cf026.c000.snappy.parquet",
		"birthyear=1995/cdc-00001-e4b7260f-837c-4dda-97a8-9c977874b3da.c000.snappy.parquet",
	} {
		vals, err := parquettest.StringColumn(testdata(t, "cdc_ict_table/_change_data/"+f), "_change_type")
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, vals...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []string{"update_postimage", "update_postimage", "update_preimage", "update_preimage"}) {
		t.Fatalf("change types %v", all)
	}
	// v2 (DELETE): one delete row in this file.
	data := testdata(t, "cdc_ict_table/_change_data/birthyear=1995/cdc-00000-2a898d42-80c6-40a8-a045-dc92579b0c52.c000.snappy.parquet")
	types, err := parquettest.StringColumn(data, "_change_type")
	if err != nil || !slices.Equal(types, []string{"delete"}) {
		t.Fatalf("change types %q, %v", types, err)
	}
	for _, col := range []string{"name", "age"} {
		vals, err := parquettest.StringColumn(data, col)
		if err != nil || len(vals) != 1 || vals[0] == "" {
			t.Fatalf("%s: %q, %v", col, vals, err)
		}
	}
	if _, err := parquettest.StringColumn(data, "nope"); err == nil {
		t.Fatal("missing column succeeded")
	}
}
