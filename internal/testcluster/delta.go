package testcluster

import (
	"fmt"
	"net/http"
	"testing"
)

// DeltaBase is the Delta API prefix.
const DeltaBase = "/api/2.1/unity-catalog/delta/v1"

// TablePath is the Delta API path of a table.
func TablePath(catalog, schema, table string) string {
	return fmt.Sprintf("%s/catalogs/%s/schemas/%s/tables/%s", DeltaBase, catalog, schema, table)
}

// Stage reserves a managed table and returns the staging answer; headers
// are sent along (a credential, say).
func Stage(t testing.TB, url, catalog, schema, name string, headers ...string) Response {
	t.Helper()
	r := Do(t, http.MethodPost, fmt.Sprintf("%s%s/catalogs/%s/schemas/%s/staging-tables", url, DeltaBase, catalog, schema),
		map[string]any{"name": name}, headers...)
	if r.Status != http.StatusOK {
		t.Fatalf("stage %s: %d %s", name, r.Status, r.Raw)
	}
	return r
}

// CreateManagedBody is a create request that satisfies the managed-table
// contract, built from a staging answer.
func CreateManagedBody(name string, staging Response) map[string]any {
	props := map[string]any{}
	for k, v := range staging.Body["required-properties"].(map[string]any) {
		props[k] = v
	}
	proto := staging.Body["required-protocol"].(map[string]any)
	return map[string]any{
		"name": name, "location": staging.Body["location"], "table-type": "MANAGED",
		"last-commit-timestamp-ms": 1700000000000,
		"columns": map[string]any{"type": "struct", "fields": []any{
			map[string]any{"name": "id", "type": "long", "nullable": false, "metadata": map[string]any{}},
			map[string]any{"name": "amount", "type": "double", "nullable": true, "metadata": map[string]any{}},
		}},
		"protocol":   proto,
		"properties": props,
	}
}

// CreateManaged stages on stageURL and creates on createURL; it returns
// the table uuid. headers are sent with both requests.
func CreateManaged(t testing.TB, stageURL, createURL, catalog, schema, name string, headers ...string) string {
	t.Helper()
	st := Stage(t, stageURL, catalog, schema, name, headers...)
	r := Do(t, http.MethodPost, fmt.Sprintf("%s%s/catalogs/%s/schemas/%s/tables", createURL, DeltaBase, catalog, schema),
		CreateManagedBody(name, st), headers...)
	if r.Status != http.StatusOK {
		t.Fatalf("create %s: %d %s", name, r.Status, r.Raw)
	}
	return st.Body["table-id"].(string)
}

// CommitBody is an add-commit of version v with assert-table-uuid.
func CommitBody(uuid string, v int64, fileName string) map[string]any {
	return map[string]any{
		"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": uuid}},
		"updates": []any{map[string]any{"action": "add-commit", "commit": map[string]any{
			"version": v, "timestamp": 1700000000000 + v, "file-name": fileName,
			"file-size": 1024, "file-modification-timestamp": 1700000000000 + v}}},
	}
}

// StagedName is the conventional staged commit file name of version v.
func StagedName(v int64, id string) string { return fmt.Sprintf("%020d.%s.json", v, id) }
