package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// BenchmarkDeltaLoadAndCommit is one Delta writer's round on a one-node
// cluster, as raftcat bench makes it: load the table, then add-commit the
// next version asserting its uuid and reporting the one before as
// published. Requests go to the node's handler in process, so what is
// measured is the server's work (middleware, binding, planning, the raft
// entry with its log write and sync, applying, answering), not a
// network's; allocs/op is what the garbage collector pays for later.
//
//	go test ./httpapi -run x -bench DeltaLoadAndCommit -benchmem
func BenchmarkDeltaLoadAndCommit(b *testing.B) {
	nd := testcluster.Start(b, 1, testcluster.Options{})[0]
	uuid := testcluster.CreateManaged(b, nd.URL, nd.URL, "unity", "default", "bench")
	path := testcluster.TablePath("unity", "default", "bench")
	h := nd.Handler()
	version := int64(0)
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"latest-table-version":`+strconv.FormatInt(version, 10))) {
			b.Fatalf("load: %d %s", w.Code, w.Body)
		}
		version++
		w = httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(commitBody(uuid, version)))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("commit %d: %d %s", version, w.Code, w.Body)
		}
	}
}

func commitBody(uuid string, v int64) []byte {
	backfill := ""
	if v > 1 {
		backfill = fmt.Sprintf(`,{"action":"set-latest-backfilled-version","latest-published-version":%d}`, v-1)
	}
	return fmt.Appendf(nil, `{"requirements":[{"type":"assert-table-uuid","uuid":%q}],"updates":[`+
		`{"action":"add-commit","commit":{"version":%d,"timestamp":%d,"file-name":"%020d.w.json",`+
		`"file-size":1024,"file-modification-timestamp":%d}}%s]}`, uuid, v, 1700000000000+v, v, 1700000000000+v, backfill)
}
