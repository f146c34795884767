package main

// The binaries the process tests run: the one built from this tree, and
// released ones built from a fixed git commit for upgrade tests.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error

	runDirsMu sync.Mutex
	runDirs   []string // directories of this run, removed by TestMain

	releaseMu   sync.Mutex
	releaseBins = map[string]string{} // commit -> binary
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

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// releaseBinary returns the raftcat binary of a released commit (a full
// 40-hex hash), building it from git on first use. Built binaries are
// cached under the user cache dir, so reruns do not build them again.
func releaseBinary(t *testing.T, commit string) string {
	t.Helper()
	if !fullCommit.MatchString(commit) {
		t.Fatalf("release commit %q is not a full 40-hex hash", commit)
	}
	releaseMu.Lock()
	defer releaseMu.Unlock()
	if bin, ok := releaseBins[commit]; ok {
		return bin
	}
	dir, err := releaseCacheDir(commit)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "raftcat")
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		if err := buildRelease(commit, bin); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	releaseBins[commit] = bin
	return bin
}

// releaseCacheDir is <user cache dir>/raftcat-test/<commit>, or, without
// a user cache dir, one in a directory of this test run that TestMain
// removes. buildRelease creates it.
func releaseCacheDir(commit string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		if base, err = runDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(base, "raftcat-test", commit), nil
}

// buildRelease extracts commit from the repository holding this package
// into a temporary directory, builds ./cmd/raftcat there and moves the
// binary to bin atomically (a concurrent run may build the same one).
func buildRelease(commit, bin string) error {
	root, err := gitOutput("", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("upgrade test: find the repository root: %v", err)
	}
	if _, err := gitOutput(root, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return fmt.Errorf("upgrade test: commit %s, the release the upgrade starts from, is not in this clone "+
			"(a shallow clone?): fetch the history with `git fetch --unshallow` (or `git fetch origin %s`) and rerun: %v",
			commit, commit, err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	src, err := os.MkdirTemp("", "raftcat-release-src")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := gitExtract(root, commit, src); err != nil {
		return err
	}
	tmp := bin + ".building-" + randomID()
	defer os.Remove(tmp)
	build := exec.Command("go", "build", "-trimpath", "-o", tmp, "./cmd/raftcat")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build raftcat at %s: %v\n%s", commit, err, out)
	}
	return os.Rename(tmp, bin)
}

// gitExtract writes the tree of commit into dir (git archive | tar -x).
func gitExtract(root, commit, dir string) error {
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var archiveErr, untarErr strings.Builder
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		return fmt.Errorf("tar: %v", err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return fmt.Errorf("git archive %s: %v: %s", commit, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("tar -x of git archive %s: %v: %s", commit, err, untarErr.String())
	}
	return nil
}

func gitOutput(dir string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
