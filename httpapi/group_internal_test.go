package httpapi

import "testing"

// A group owns its prefix and the paths below it, never a path that only
// starts with the same letters.
func TestUnderAPrefix(t *testing.T) {
	for _, c := range []struct {
		path, prefix string
		want         bool
	}{
		{"/api/2.1/unity-catalog/tables", "/api/2.1/unity-catalog", true},
		{"/api/2.1/unity-catalog", "/api/2.1/unity-catalog", true},
		{"/api/2.1/unity-catalogue", "/api/2.1/unity-catalog", false},
		{"/api/2.1", "/api/2.1/unity-catalog", false},
		{"/anything", "", true},
		{"", "", true},
	} {
		if got := under(c.path, c.prefix); got != c.want {
			t.Errorf("under(%q, %q) = %v, want %v", c.path, c.prefix, got, c.want)
		}
	}
}
