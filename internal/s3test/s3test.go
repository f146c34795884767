// Package s3test runs a real S3-compatible server for tests: versitygw
// over a posix directory, bound to 127.0.0.1. The binary is built once
// from the Go module proxy into a per-user cache and reused.
package s3test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/raftcat/raftcat/internal/logging"
)

// Version is the versitygw release the tests run.
const Version = "v1.8.0"

const module = "github.com/versity/versitygw/cmd/versitygw"

// Server is one running versitygw.
type Server struct {
	Endpoint  string // http://127.0.0.1:<port>
	AccessKey string
	SecretKey string
	Region    string
	Dir       string // the posix root: one directory per bucket

	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{}
}

// Start builds (or reuses) versitygw, runs it over a fresh temp dir and
// waits until it answers. It is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	s := &Server{AccessKey: "raftcat-test-access", SecretKey: "raftcat-test-secret-key-0123456789", Region: "us-east-1", Dir: t.TempDir()}
	port, err := freePort()
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	s.start(t, bin, port)
	t.Cleanup(s.stop)
	s.waitHealthy(t)
	return s
}

func (s *Server) start(t testing.TB, bin string, port int) {
	t.Helper()
	s.log = &lockedBuffer{}
	s.cmd = exec.Command(bin, "--port", "127.0.0.1:"+strconv.Itoa(port), "--health", "/health",
		"--region", s.Region, "posix", s.Dir)
	// A clean environment: no VGW_* settings of the caller leak in.
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.Dir,
		"ROOT_ACCESS_KEY=" + s.AccessKey, "ROOT_SECRET_KEY=" + s.SecretKey}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("s3test: start versitygw: %v", err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
}

func (s *Server) waitHealthy(t testing.TB) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(s.Endpoint + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-s.done:
			t.Fatalf("s3test: versitygw exited before answering: %v\n%s", s.cmd.ProcessState, s.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("s3test: versitygw did not answer %s/health within 30s\n%s", s.Endpoint, s.log.String())
		}
	}
}

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Env is the environment through which a process's AWS SDK standard
// credential chain finds this server's keys and region (no shared config
// files, no instance metadata).
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + filepath.Join(s.Dir, ".aws-none", "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(s.Dir, ".aws-none", "credentials")}
}

// Setenv puts Env into this test process's environment.
func (s *Server) Setenv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Client is an S3 client with the server's root keys, path-style.
func (s *Server) Client() *s3.Client {
	cfg := aws.Config{Region: s.Region, Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
	})
}

// CreateBucket creates a bucket.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects the server's output from its copying goroutines.
type lockedBuffer = logging.Capture

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary returns the path of a versitygw Version binary: $RAFTCAT_VERSITYGW
// if set, else the per-user cache's copy, built there with `go install`
// from the module proxy the first time (test packages running at once
// share one build through a file lock). It fails the test if it cannot.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() { binPath, binErr = findOrBuild() })
	if binErr != nil {
		t.Fatalf("s3test: no versitygw %s binary: %v", Version, binErr)
	}
	return binPath
}

func findOrBuild() (string, error) {
	if p := os.Getenv("RAFTCAT_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("RAFTCAT_VERSITYGW: %w", err)
		}
		return p, nil
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "versitygw")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	return bin, buildLocked(dir, bin)
}

// CacheDir is where the versitygw binary is kept:
// <user cache dir>/raftcat/versitygw-<Version>.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "raftcat", "versitygw-"+Version)
	return dir, os.MkdirAll(dir, 0o755)
}

func buildLocked(dir, bin string) error {
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return nil // built meanwhile by another test process
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(goTool(), "install", module+"@"+Version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go install %s@%s (needs the Go module proxy): %v\n%s", module, Version, err, out)
	}
	return os.Rename(filepath.Join(tmp, "versitygw"), bin)
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
