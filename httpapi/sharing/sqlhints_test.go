package sharing_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// partitionedGolden are the golden tables with partition columns.
var partitionedGolden = []string{"delta-0.8.0-partitioned", "cdf-table", "cdc_ict_table", "dv-with-columnmapping", "table_with_column_mapping"}

// sqlHintCase is a query with predicateHints and the files it must keep:
// those whose partition values (keyed as the log keys them) pass keep;
// keep nil means every file (the hints are not understood).
type sqlHintCase struct {
	table string
	hints []string
	keep  func(pv map[string]string) bool
}

func eq(col, v string) func(map[string]string) bool {
	return func(pv map[string]string) bool { return pv[col] == v }
}

func num(pv map[string]string, col string) int {
	n, _ := strconv.Atoi(pv[col])
	return n
}

const (
	cmPart    = "col-60c949ca-b8bc-4330-b931-b73fb4c60037" // dv-with-columnmapping's part
	cmCompany = "col-173b4db9-b5ad-427f-9e75-516aae37fbbb" // table_with_column_mapping's Company Very Short
)

var sqlHintCases = []sqlHintCase{
	{"delta-0.8.0-partitioned", []string{"year = '2021'"}, eq("year", "2021")},
	{"delta-0.8.0-partitioned", []string{"year = '2021'", "month = '12'"}, func(pv map[string]string) bool { return pv["year"] == "2021" && pv["month"] == "12" }},
	{"delta-0.8.0-partitioned", []string{"month IN ('1', '4')"}, func(pv map[string]string) bool { return pv["month"] == "1" || pv["month"] == "4" }},
	{"delta-0.8.0-partitioned", []string{"year = '2020' AND month = '2'"}, func(pv map[string]string) bool { return pv["year"] == "2020" && pv["month"] == "2" }},
	{"delta-0.8.0-partitioned", []string{"year = '2020' or DAY = '20'"}, func(pv map[string]string) bool { return pv["year"] == "2020" || pv["day"] == "20" }},
	{"delta-0.8.0-partitioned", []string{"month >= '2'"}, func(pv map[string]string) bool { return pv["month"] >= "2" }}, // strings: '12' < '2'
	{"delta-0.8.0-partitioned", []string{"'2' < month"}, func(pv map[string]string) bool { return pv["month"] > "2" }},
	{"delta-0.8.0-partitioned", []string{"day BETWEEN '3' AND '4'"}, func(pv map[string]string) bool { return pv["day"] >= "3" && pv["day"] <= "4" }},
	{"delta-0.8.0-partitioned", []string{"NOT (year = '2021')"}, eq("year", "2020")},
	{"delta-0.8.0-partitioned", []string{"year <> '2021'"}, eq("year", "2020")},
	{"delta-0.8.0-partitioned", []string{"`month` NOT IN ('12')"}, func(pv map[string]string) bool { return pv["month"] != "12" }},
	{"delta-0.8.0-partitioned", []string{"(CAST(partitionValues.year AS STRING) = '2021')"}, eq("year", "2021")}, // Spark's client
	{"delta-0.8.0-partitioned", []string{"year IS NULL"}, func(map[string]string) bool { return false }},
	{"delta-0.8.0-partitioned", []string{"year = '2021' AND value = 'x'"}, eq("year", "2021")}, // the data column's conjunct is left out
	{"delta-0.8.0-partitioned", []string{"value = 'x'", "day = '20'"}, eq("day", "20")},
	// Not understood, so every file: a data column, inside an OR; a number
	// against a string column (SQL compares those as numbers); a CAST to
	// another type; LIKE; broken syntax; adjacent string literals.
	{"delta-0.8.0-partitioned", []string{"year = '2021' OR value = 'x'"}, nil},
	{"delta-0.8.0-partitioned", []string{"day < 5"}, nil},
	{"delta-0.8.0-partitioned", []string{"CAST(year AS INT) = 2021"}, nil},
	{"delta-0.8.0-partitioned", []string{"year LIKE '20%'"}, nil},
	{"delta-0.8.0-partitioned", []string{"year = ", "((year = '2021')", "year = '20''21'"}, nil},
	{"cdf-table", []string{"birthday = DATE '2023-12-22'"}, eq("birthday", "2023-12-22")},
	{"cdf-table", []string{"birthday >= '2023-12-25'"}, func(pv map[string]string) bool { return pv["birthday"] >= "2023-12-25" }},
	{"cdf-table", []string{"birthday < '2023-12-24' OR birthday > '2023-12-28'"}, func(pv map[string]string) bool {
		return pv["birthday"] < "2023-12-24" || pv["birthday"] > "2023-12-28"
	}},
	{"cdf-table", []string{"birthday >= '2023-12-23'", "birthday < DATE '2023-12-29' OR birthday IS NULL"}, eq("birthday", "2023-12-25")}, // docs/delta-sharing.md
	{"cdc_ict_table", []string{"birthyear = 1995"}, eq("birthyear", "1995")},
	{"cdc_ict_table", []string{"1990L > birthyear"}, eq("birthyear", "1986")},
	{"cdc_ict_table", []string{"birthyear = '1986'"}, eq("birthyear", "1986")},
	{"cdc_ict_table", []string{"birthyear = 1995.5"}, nil},
	{"dv-with-columnmapping", []string{"part < 3"}, func(pv map[string]string) bool { return num(pv, cmPart) < 3 }},
	{"dv-with-columnmapping", []string{"part IN (1, 8) OR part >= 9"}, func(pv map[string]string) bool {
		return slices.Contains([]int{1, 8, 9}, num(pv, cmPart))
	}},
	{"table_with_column_mapping", []string{"`Company Very Short` = 'BMS'"}, eq(cmCompany, "BMS")},
}

// fileParts maps a snapshot answer's files (either format) to their
// partition values, keyed as the log keys them.
func fileParts(t *testing.T, a answer) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, f := range a.of("file") {
		raw := f["partitionValues"]
		if dsa, ok := f["deltaSingleAction"].(map[string]any); ok {
			raw = dsa["add"].(map[string]any)["partitionValues"]
		}
		b, _ := json.Marshal(raw)
		var pv map[string]string
		if err := json.Unmarshal(b, &pv); err != nil {
			t.Fatalf("partition values %s: %v", b, err)
		}
		out[f["id"].(string)] = pv
	}
	return out
}

// SQL predicateHints prune the golden partitioned tables' files by
// partition values exactly as far as they are understood: a file is kept
// if and only if its partition values may satisfy every understood
// conjunct, and a hint that is not understood keeps every file.
func TestSQLPredicateHintsOnGoldenTables(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	p := provider{t: t, url: testcluster.Leader(t, nodes).URL}
	p.schema("golden")
	p.share("parts")
	for _, dir := range partitionedGolden {
		p.registerExternal("golden", sharedName(dir), copyTable(t, dir))
		p.add("parts", "unity.golden."+sharedName(dir), "golden."+sharedName(dir), false)
	}
	prof := p.recipient("analyst")
	p.grant("parts", "analyst")
	c := prof.client(t)
	c.caps = pyDetect
	all := map[string]map[string]map[string]string{}
	for _, dir := range partitionedGolden {
		all[dir] = fileParts(t, c.query(tablePath("parts", "golden", sharedName(dir)), map[string]any{}).mustOK(t))
	}
	for _, tc := range sqlHintCases {
		files := all[tc.table]
		want := []string{}
		for id, pv := range files {
			if tc.keep == nil || tc.keep(pv) {
				want = append(want, id)
			}
		}
		if tc.keep != nil && len(want) == len(files) && len(files) > 0 {
			t.Fatalf("%s %q: the case prunes nothing of %v", tc.table, tc.hints, files)
		}
		a := c.query(tablePath("parts", "golden", sharedName(tc.table)), map[string]any{"predicateHints": tc.hints}).mustOK(t)
		got := slices.Sorted(maps.Keys(fileParts(t, a)))
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s %q: kept %d files %v, want %d %v (all: %v)", tc.table, tc.hints, len(got), got, len(want), want, files)
		}
	}
}
