package iceberg

import (
	"strings"
	"testing"
)

// The cache holds at most its bound in bytes, dropping the least recently
// used entries first, and refuses an entry larger than the bound.
func TestMetadataCacheIsBounded(t *testing.T) {
	entry := func(loc string) *metadataFile {
		return &metadataFile{location: loc, raw: []byte(strings.Repeat("x", 100))}
	}
	m := newMetadataCache(3 * cost(entry("")))
	for _, loc := range []string{"a", "b", "c"} {
		m.put(entry(loc))
	}
	m.get("a") // b is now the least recently used
	m.put(entry("d"))
	for loc, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, got := m.get(loc); got != want {
			t.Errorf("cached %s: %v, want %v", loc, got, want)
		}
	}
	if m.bytes > m.max {
		t.Fatalf("cache holds %d bytes, bound %d", m.bytes, m.max)
	}
	m.put(&metadataFile{location: "huge", raw: make([]byte, m.max)})
	if _, got := m.get("huge"); got {
		t.Fatal("an entry over the bound was cached")
	}
}
