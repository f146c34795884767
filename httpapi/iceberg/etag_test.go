package iceberg

import "testing"

// If-None-Match matches a tag however a client lists it.
func TestNoneMatch(t *testing.T) {
	tag := etag("file:///t/metadata/00000-x.metadata.json", modeAll)
	for _, lines := range [][]string{{tag}, {"W/" + tag}, {`"zzz", ` + tag}, {`"zzz"`, tag}, {"*"}} {
		if !noneMatch(lines, tag) {
			t.Errorf("%q does not match %s", lines, tag)
		}
	}
	for _, lines := range [][]string{nil, {`"zzz"`}, {""}, {etag("file:///t/metadata/00000-x.metadata.json", modeRefs)}} {
		if noneMatch(lines, tag) {
			t.Errorf("%q matches %s", lines, tag)
		}
	}
}
