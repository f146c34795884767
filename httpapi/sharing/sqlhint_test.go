package sharing

import (
	"slices"
	"strings"
	"testing"
)

// sqlKept compiles SQL hints against the digest's "parted" table and
// returns the files kept; nil when no conjunct was used.
func sqlKept(t *testing.T, hints ...string) []string {
	t.Helper()
	keep, _ := compileSQLHints(hints, partedColumns)
	if keep == nil {
		return nil
	}
	out := []string{}
	for _, f := range partedFiles {
		if keep(f.hintFile) {
			out = append(out, f.name)
		}
	}
	return out
}

// The SQL parser reads what it claims to and leaves out the rest: data
// columns, NULL literals, ambiguous quoting, unknown escapes, oversized
// and overly nested hints.
func TestSQLHintParsing(t *testing.T) {
	t.Parallel()
	used := map[string][]string{
		"date = '2021-01-03'":                               {"p5"},
		"date = DATE '2021-01-03'":                          {"p5"},
		"`date` == \"2021-01-01\"":                          {"p4"},
		"date <=> '2021-01-01'":                             {"p4"},
		"date != '2021-01-01'":                              {"p5"},
		"date NOT BETWEEN '2021-01-02' AND '2022-01-01'":    {"p4"},
		"date IS NOT NULL":                                  {"p4", "p5"},
		"NOT NOT date > '2021-01-02'":                       {"p5"},
		"date IN ('2020-01-01', '2021-01-01') AND id > 100": {"p4"},
		"(((date < '2021-01-02')))":                         {"p4"},
		"partitionValues.`date` >= '2021-01-02'":            {"p5"},
		"CAST(date AS DATE) = '2021-01-01'":                 {"p4"},
	}
	for hint, want := range used {
		if got := sqlKept(t, hint); !slices.Equal(got, want) {
			t.Errorf("%q kept %v, want %v", hint, got, want)
		}
	}
	deep := strings.Repeat("NOT ", hintMaxDepth+1) + "date = '2021-01-01'"
	for _, hint := range []string{
		"id > 4", "note = 'a'", "date = NULL", "date = '2021' '-01-01'", `date = '2021-01-01\n'`,
		"date = 20210101", "date = TIMESTAMP '2021-01-01 00:00:00'", "CAST(date AS STRING) = '2021-01-01'",
		"date = '2021-01-01' OR id = 1", "t.date = '2021-01-01'", "date", "date = 'x", "date = '2021-01-01' AND", deep,
		"date = '" + strings.Repeat("x", hintMaxBytes) + "'", "date in ()", "and = 1", "date = 1Q",
	} {
		if got := sqlKept(t, hint); got != nil {
			t.Errorf("%.80q was used (kept %v)", hint, got)
		}
	}
	if got := sqlKept(t, "date = '2021-01-03'", "id > 4"); !slices.Equal(got, []string{"p5"}) {
		t.Errorf("a partition conjunct beside a data one kept %v", got)
	}
	if keep, skipped := compileSQLHints([]string{"date = '2021-01-03'", "nope ="}, partedColumns); keep == nil || len(skipped) != 1 {
		t.Errorf("skipped %v", skipped)
	}
}
