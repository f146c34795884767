package iceberg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// metadataWith is table metadata holding n snapshots, and properties
// with characters JSON encoders escape.
func metadataWith(t testing.TB, n int) table.Metadata {
	t.Helper()
	var snaps, log []string
	for i := 1; i <= n; i++ {
		parent := ""
		if i > 1 {
			parent = fmt.Sprintf(`"parent-snapshot-id":%d,`, i-1)
		}
		snaps = append(snaps, fmt.Sprintf(`{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,`+
			`"manifest-list":"file:///w/t/metadata/snap-%d.avro","summary":{"operation":"append","added-data-files":"1"},"schema-id":0}`,
			i, parent, i, 1700000000000+i, i))
		log = append(log, fmt.Sprintf(`{"snapshot-id":%d,"timestamp-ms":%d}`, i, 1700000000000+i))
	}
	raw := `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"file:///w/t",` +
		`"last-sequence-number":` + fmt.Sprint(n) + `,"last-updated-ms":1700000009999,"last-column-id":1,` +
		`"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}],` +
		`"current-schema-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"default-spec-id":0,"last-partition-id":999,` +
		`"properties":{"note":"a <b> & c"},"current-snapshot-id":` + fmt.Sprint(n) + `,` +
		`"snapshots":[` + strings.Join(snaps, ",") + `],"snapshot-log":[` + strings.Join(log, ",") + `],` +
		`"metadata-log":[],"sort-orders":[{"order-id":0,"fields":[]}],"default-sort-order-id":0,` +
		`"refs":{"main":{"snapshot-id":` + fmt.Sprint(n) + `,"type":"branch"}}}`
	meta, err := table.ParseMetadataBytes([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// The metadata written for a commit is byte for byte what encoding/json
// made of it before.
func TestEncodeMetadataIsWhatEncodingJSONWrites(t *testing.T) {
	meta := metadataWith(t, 50)
	want, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeMetadata(meta)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encodeMetadata differs (%v):\n%s\nwant\n%s", err, got, want)
	}
}

func BenchmarkEncodeMetadata(b *testing.B) {
	meta := metadataWith(b, 500)
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(meta); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("its own MarshalJSON", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeMetadata(meta); err != nil {
				b.Fatal(err)
			}
		}
	})
}
