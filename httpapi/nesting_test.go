package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/jsonlimit"
)

// deepObject is a JSON object nesting depth levels: {"a":{"a":...{}}}.
func deepObject(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// deepColumn is a column's type_json whose metadata makes the whole
// document nest depth levels.
func deepColumn(depth int) string {
	return `{"name":"id","type":"long","nullable":false,"metadata":` + deepObject(depth-1) + `}`
}

func ucDeepTable(sch, name string, depth int) map[string]any {
	b := ucTableBody(sch, name, "DELTA", "file:///data/"+name)
	b["columns"] = []any{map[string]any{"name": "id", "type_json": deepColumn(depth), "position": 0}}
	return b
}

// A value nested inside a string field grows when it is embedded in a log
// entry. Whatever the request decoder accepts must still decode from the
// log; past the documented limit the request is refused with a 400 and
// the node keeps serving (it used to stop every replica for good).
func TestDeeplyNestedColumnsAreRefusedBeforeTheLog(t *testing.T) {
	a := startAPI(t)
	_, sch := a.newSchema()

	// Around 10000 levels (encoding/json's limit) one depth or another
	// passes the request decoder but not the log decoder.
	for depth := 9994; depth <= 10000; depth++ {
		t.Run(fmt.Sprintf("UC REST type_json nested %d levels", depth), func(t *testing.T) {
			r := a.with(t).do(http.MethodPost, apiPrefix+"/tables", ucDeepTable(sch, fmt.Sprintf("deep%d", depth), depth))
			ucErr(t, r, http.StatusBadRequest, "INVALID_ARGUMENT", "nests deeper than 1000 levels")
		})
		t.Run(fmt.Sprintf("Delta API columns nested %d levels", depth), func(t *testing.T) {
			name := fmt.Sprintf("delta%d", depth)
			body := `{"name":"` + name + `","location":"file:///data/` + name + `","table-type":"EXTERNAL",` +
				`"protocol":{"min-reader-version":1,"min-writer-version":2},"last-commit-timestamp-ms":1700000000000,"columns":{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":` +
				deepObject(depth-4) + `}]}}`
			r := a.with(t).do(http.MethodPost, deltaPrefix+"/catalogs/unity/schemas/"+sch+"/tables", body,
				"Content-Type", "application/json")
			deltaErr(t, r, http.StatusBadRequest, "InvalidParameterValueException", "nests deeper than 1000 levels")
		})
	}
	t.Run("type_json at the limit is stored and read back", func(t *testing.T) {
		a := a.with(t)
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucDeepTable(sch, "atlimit", jsonlimit.MaxDepth))
		a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/unity."+sch+".atlimit", nil)
	})
	t.Run("the node still commits afterwards", func(t *testing.T) {
		a := a.with(t)
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, "after", "DELTA", "file:///data/after"))
		a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/tables/unity."+sch+".after", nil)
	})
}
