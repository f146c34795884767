package main

// The binary the process tests run, built from this tree.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error

	runDirsMu sync.Mutex
	runDirs   []string // directories of this run, removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	runDirsMu.Lock()
	for _, dir := range runDirs {
		_ = os.RemoveAll(dir)
	}
	runDirsMu.Unlock()
	os.Exit(code)
}

// runDir makes a directory that lives until the end of the test run.
func runDir() (string, error) {
	dir, err := os.MkdirTemp("", "raftcat-bin")
	if err != nil {
		return "", err
	}
	runDirsMu.Lock()
	runDirs = append(runDirs, dir)
	runDirsMu.Unlock()
	return dir, nil
}

// raftcatBinary builds the real binary once per test run.
func raftcatBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var dir string
		if dir, buildErr = runDir(); buildErr != nil {
			return
		}
		binPath = filepath.Join(dir, "raftcat")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}
