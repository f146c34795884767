package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// stamp identifies one version of a file: a rotation that replaces or
// rewrites it changes its modification time or size.
type stamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	return stamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// watched holds what was last read from a set of files, and reads them
// again when any of them changed. A read that fails (a pair half written,
// a file missing for a moment) keeps what was read before; the failure is
// logged once per version of the files.
type watched[T any] struct {
	what   string
	paths  []string
	read   func() (T, error)
	log    *slog.Logger
	mu     sync.Mutex
	val    T
	stamps []stamp
	failed []stamp // the stamps whose read failed, logged already
}

func newWatched[T any](what string, log *slog.Logger, read func() (T, error), paths ...string) (*watched[T], error) {
	w := &watched[T]{what: what, paths: paths, read: read, log: log}
	stamps, err := w.stampsNow()
	if err != nil {
		return nil, err
	}
	if w.val, err = read(); err != nil {
		return nil, err
	}
	w.stamps = stamps
	return w, nil
}

func (w *watched[T]) stampsNow() ([]stamp, error) {
	out := make([]stamp, len(w.paths))
	for i, p := range w.paths {
		s, err := stampOf(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.what, err)
		}
		out[i] = s
	}
	return out, nil
}

// current returns the files' content, read again if they changed.
func (w *watched[T]) current() T {
	w.mu.Lock()
	defer w.mu.Unlock()
	stamps, err := w.stampsNow()
	if err != nil || equalStamps(stamps, w.stamps) || equalStamps(stamps, w.failed) {
		return w.val
	}
	val, err := w.read()
	if err != nil {
		w.failed = stamps
		w.log.Error("could not reload "+w.what+"; still using the one read before", "files", w.paths, "err", err)
		return w.val
	}
	w.val, w.stamps, w.failed = val, stamps, nil
	w.log.Info("reloaded "+w.what, "files", w.paths)
	return w.val
}

func equalStamps(a, b []stamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].mod.Equal(b[i].mod) || a[i].size != b[i].size {
			return false
		}
	}
	return true
}

// KeyPair is a certificate and its key, read from PEM files and read
// again on the first handshake after either file changed.
type KeyPair struct{ w *watched[*tls.Certificate] }

// LoadKeyPair reads certFile and keyFile; they must hold a matching pair.
func LoadKeyPair(certFile, keyFile string, log *slog.Logger) (*KeyPair, error) {
	read := func() (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		return &c, nil
	}
	w, err := newWatched("certificate "+certFile, orDefault(log), read, certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &KeyPair{w: w}, nil
}

// Certificate is the pair as the files now hold it.
func (k *KeyPair) Certificate() *tls.Certificate { return k.w.current() }

// Leaf is the pair's certificate, parsed.
func (k *KeyPair) Leaf() (*x509.Certificate, error) {
	c := k.Certificate()
	if c.Leaf != nil {
		return c.Leaf, nil
	}
	return x509.ParseCertificate(c.Certificate[0])
}

// CAPool is a bundle of CA certificates read from a PEM file, read again
// on the first handshake after the file changed.
type CAPool struct{ w *watched[*x509.CertPool] }

// LoadCAPool reads file, which must hold at least one certificate.
func LoadCAPool(file string, log *slog.Logger) (*CAPool, error) {
	read := func() (*x509.CertPool, error) {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("no PEM certificate in it")
		}
		return pool, nil
	}
	w, err := newWatched("CA bundle "+file, orDefault(log), read, file)
	if err != nil {
		return nil, fmt.Errorf("load CA bundle %s: %w", file, err)
	}
	return &CAPool{w: w}, nil
}

// Pool is the bundle as the file now holds it.
func (p *CAPool) Pool() *x509.CertPool { return p.w.current() }

func orDefault(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.Default()
	}
	return log
}
