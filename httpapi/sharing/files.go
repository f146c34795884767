package sharing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/storage"
)

// fileClaim is what a self-served file URL grants: one object below a
// table's root, until Expires. Root and Rel are signed together, so a
// URL can only ever name a file inside the table it was issued for.
type fileClaim struct {
	Root    string `json:"r"`
	Rel     string `json:"p"`
	Expires int64  `json:"x"` // ms epoch
	Key     uint64 `json:"k"` // index of the signing key
}

const filePurpose = "file"

// urlSigner hands out the URLs of one query's files.
type urlSigner struct {
	s       *Server
	ctx     context.Context
	key     *fsm.URLSigningKey
	root    string // table location
	base    string // the protocol's public URL
	expires time.Time
	sealer  *sealer
}

// sign returns the URL of the object at loc, which must lie inside the
// table: a URL the storage signs where it can (s3, gs, abfs), else one
// this server serves and verifies itself.
func (u *urlSigner) sign(loc string) (string, error) {
	rel, ok := strings.CutPrefix(loc, strings.TrimRight(u.root, "/")+"/")
	if !ok || !cleanRel(rel) {
		return "", fmt.Errorf("file %s lies outside the table location %s", loc, u.root)
	}
	if !strings.HasPrefix(u.root, "file:") {
		signed, err := u.s.cfg.Objects.SignedURL(u.ctx, loc, time.Until(u.expires))
		if !errors.Is(err, storage.ErrSigningUnsupported) {
			return signed, err
		}
	}
	claim := fileClaim{Root: u.root, Rel: rel, Expires: u.expires.UnixMilli(), Key: u.key.Index}
	if u.sealer == nil {
		u.sealer = newSealer(u.key, filePurpose)
	}
	return u.base + FilesPath + "/" + u.sealer.seal(claim), nil
}

// cleanRel accepts a relative, normalised object path: no "..", no
// empty or "." segments.
func cleanRel(rel string) bool {
	return rel != "" && !strings.HasPrefix(rel, "/") && path.Clean(rel) == rel && !strings.HasPrefix(rel, "../") && rel != ".."
}

// serveFile serves a self-signed file URL with range requests. Any node
// verifies it with the key in its own state; a node that has not applied
// the key the URL names yet (it was created a moment ago) waits for it.
func (s *Server) serveFile(c echo.Context) error {
	token := c.Param("token")
	key, ok := s.keyFor(c.Request().Context(), token)
	var claim fileClaim
	if !ok || !open(key, filePurpose, token, &claim) || claim.Key != key.Index || !cleanRel(claim.Rel) {
		return forbidden("The file URL is not valid (tampered with, or signed with a retired key).")
	}
	if time.Now().UnixMilli() >= claim.Expires {
		return forbidden("The file URL has expired; query the table again for fresh URLs.")
	}
	return s.sendObject(c, storage.Join(claim.Root, claim.Rel))
}

// keyWait bounds how long a node waits to apply the key a URL names.
const keyWait = 2 * time.Second

// keyFor returns this node's signing key once it has applied the key the
// token claims to be signed with (false if it never does in time).
func (s *Server) keyFor(ctx context.Context, token string) (*fsm.URLSigningKey, bool) {
	body, _, _ := strings.Cut(token, ".")
	var claim fileClaim
	if !decodeUnverified(body, &claim) {
		return nil, false
	}
	deadline := time.Now().Add(keyWait)
	for {
		st, _ := s.core.Node().StaleState()
		key, ok := st.URLSigningKey()
		if ok && key.Index >= claim.Key || time.Now().After(deadline) || ctx.Err() != nil {
			return key, ok
		}
		time.Sleep(10 * time.Millisecond) // the apply loop has no notification to wait on
	}
}

func (s *Server) sendObject(c echo.Context, loc string) error {
	ctx := c.Request().Context()
	info, err := s.cfg.Objects.Stat(ctx, loc)
	if errors.Is(err, storage.ErrNotFound) {
		return notFound("The file no longer exists in the table's storage.")
	}
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/octet-stream")
	h.Set(echo.HeaderCacheControl, "private, no-transform")
	rs := &rangeReader{ctx: ctx, store: s.cfg.Objects, loc: loc, size: info.Size}
	http.ServeContent(c.Response(), c.Request(), "", info.ModTime, rs)
	return nil
}

// rangeReader is an io.ReadSeeker over ranged reads of one object,
// fetching a chunk at a time, for http.ServeContent.
type rangeReader struct {
	ctx       context.Context
	store     ObjectStore
	loc       string
	size, off int64
	buf       []byte
}

const readChunk = 1 << 20

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	if len(r.buf) == 0 {
		chunk, err := r.store.ReadRange(r.ctx, r.loc, r.off, min(readChunk, r.size-r.off))
		if err != nil {
			return 0, err
		}
		if len(chunk) == 0 {
			return 0, io.ErrUnexpectedEOF
		}
		r.buf = chunk
	}
	n := copy(p, r.buf)
	r.buf, r.off = r.buf[n:], r.off+int64(n)
	return n, nil
}

func (r *rangeReader) Seek(offset int64, whence int) (int64, error) {
	next := offset
	switch whence {
	case io.SeekCurrent:
		next = r.off + offset
	case io.SeekEnd:
		next = r.size + offset
	}
	if next < 0 {
		return 0, errors.New("seek before the start of the object")
	}
	if next != r.off {
		r.buf = nil
	}
	r.off = next
	return next, nil
}
