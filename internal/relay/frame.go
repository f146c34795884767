// Package relay carries HTTP requests from a follower to the leader over
// one long-lived connection, with many requests in flight at once.
//
// Forwarding each request as its own HTTP exchange costs a write and a
// read system call on both nodes plus the client's per-connection
// goroutines, for every request. A relay connection instead frames each
// request and each answer (an id and an HTTP/1.1 message), and each side
// sends every frame queued since its last write in one system call, so
// under load many requests share a write (the client through a writer
// goroutine, the server through whichever worker finds no write in
// progress: see combiner). Answers come back in any order.
//
// The connection starts as an HTTP/1.1 request that the server upgrades
// (Upgrade: raftcat-relay/1), so it needs no port of its own. A server
// that does not know the upgrade answers something else, and the client
// reports ErrUnsupported so the caller can forward the plain way.
package relay

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Path is where a server accepts relay connections.
const Path = "/v1/cluster/relay"

// protocol is the Upgrade token; a later incompatible framing gets a new one.
const protocol = "raftcat-relay/1"

// MaxFrame bounds one answer, and by default one request (Server.MaxFrame
// sets a server's own bound). A larger answer is replaced by a 502.
const MaxFrame = 256 << 20

// goAwayID marks the control frame a server sends when it shuts down:
// its payload is the id of the last request it served. Requests with
// higher ids were not served, so they may be sent again elsewhere.
const goAwayID = 0

const headerLen = 12 // payload length (uint32) and request id (uint64), big endian

// ErrUnsupported means the server did not accept the relay upgrade.
var ErrUnsupported = errors.New("relay: the server does not accept relay connections")

// appendFrame appends a frame header for a payload of n bytes.
func appendFrame(dst []byte, id uint64, n int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	return binary.BigEndian.AppendUint64(dst, id)
}

// readFrame reads one frame of at most limit bytes. The payload is freshly
// allocated (it outlives the next read); a large one grows as its bytes
// arrive rather than on the length a peer announces.
func readFrame(r *bufio.Reader, limit int) (id uint64, payload []byte, err error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := int64(binary.BigEndian.Uint32(h[:4]))
	if n > int64(limit) {
		return binary.BigEndian.Uint64(h[4:]), nil, &frameTooLarge{size: n, limit: limit}
	}
	if n <= 1<<20 {
		payload = make([]byte, n)
		_, err = io.ReadFull(r, payload)
	} else {
		var b bytes.Buffer
		b.Grow(1 << 20)
		_, err = io.CopyN(&b, r, n)
		payload = b.Bytes()
	}
	if err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint64(h[4:]), payload, nil
}

// frameTooLarge reports a frame above the reader's limit; its payload is
// still unread.
type frameTooLarge struct {
	size  int64
	limit int
}

func (e *frameTooLarge) Error() string {
	return fmt.Sprintf("relay: frame of %d bytes exceeds the %d byte limit", e.size, e.limit)
}

// writeQueued writes what arrives on queue until stop closes, flushing
// only when the queue is empty, so frames queued meanwhile share one
// write. frame gives the bytes to write for an item (nil: nothing). It
// returns the first write error.
func writeQueued[T any](w io.Writer, queue <-chan T, stop <-chan struct{}, frame func(T) []byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for {
		var item T
		select {
		case item = <-queue:
		case <-stop:
			return nil
		}
		for more := true; more; {
			if b := frame(item); b != nil {
				if _, err := bw.Write(b); err != nil {
					return err
				}
			}
			select {
			case item = <-queue:
			default:
				more = false
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// readers parse frame payloads as HTTP messages without a fresh 4 KiB
// buffer each time.
var readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// combiner writes frames for whoever sends them. A sender that finds no
// write in progress writes, on its own goroutine, its frame and every
// frame queued meanwhile, in one system call per round; the others only
// queue. So a frame on an idle connection costs no hand-off to another
// goroutine, and under load many frames share one write.
type combiner struct {
	w io.Writer

	mu      sync.Mutex
	queued  [][]byte
	writing bool
	err     error // the first write error, or errCombinerClosed
}

var errCombinerClosed = errors.New("relay: connection closed")

// send writes frame, or queues it for the write in progress; it returns
// the connection's write error, if any.
func (c *combiner) send(frame []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.queued = append(c.queued, frame)
	if c.writing {
		return nil
	}
	c.writing = true
	for c.err == nil && len(c.queued) > 0 {
		batch := net.Buffers(c.queued)
		c.queued = nil
		c.mu.Unlock()
		_, err := batch.WriteTo(c.w)
		c.mu.Lock()
		if err != nil && c.err == nil {
			c.err = err
		}
	}
	c.writing = false
	return c.err
}

// close refuses later frames; a write in progress finishes.
func (c *combiner) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = errCombinerClosed
	}
}
