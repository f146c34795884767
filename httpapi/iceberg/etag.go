package iceberg

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Snapshot modes of a load (the snapshots query parameter).
const (
	modeAll  = "all"
	modeRefs = "refs"
)

// etag is the strong tag of a load answer: it names the metadata file
// and the snapshot mode, the two things that shape the body, so every
// node computes it from the replicated pointer alone.
func etag(metadataLocation, mode string) string {
	sum := sha256.Sum256([]byte(metadataLocation + "\x00" + mode))
	return `"` + hex.EncodeToString(sum[:])[:32] + `"`
}

// noneMatch reports whether an If-None-Match header (every line, each a
// comma list of tags, weak or strong, or *) names tag.
func noneMatch(lines []string, tag string) bool {
	for _, line := range lines {
		for _, t := range strings.Split(line, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || strings.Trim(t, `"`) == strings.Trim(tag, `"`) && t != "" {
				return true
			}
		}
	}
	return false
}
