package dirsync

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMkdirAllMakesEveryMissingDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "c")
	if err := MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("stat %s: %v", dir, err)
	}
	if err := MkdirAll(dir, 0o750); err != nil {
		t.Fatalf("again: %v", err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(file, 0o750); err == nil {
		t.Fatal("MkdirAll over a file succeeded")
	}
	if err := MkdirAll(filepath.Join(file, "x"), 0o750); err == nil {
		t.Fatal("MkdirAll below a file succeeded")
	}
}
