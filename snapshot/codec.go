// Package snapshot encodes and decodes the persisted form of the raftcat FSM
// state (Raft snapshots and backups) as a single forward-only stream, so that
// a catalog with hundreds of thousands of tables can be saved and restored
// without ever holding a second full copy of it in memory.
//
// # Stream format (versions 1 and 2)
//
// All integers are big-endian unless noted; "uvarint" is the unsigned varint
// of encoding/binary and must use the minimal encoding.
//
//	magic        8 bytes   "RAFTCAT\x00"
//	version      uint16    format version (FormatVersion)
//	header len   uint32    length of the JSON header, at most MaxHeaderSize
//	header       JSON      the Header object; its "version" equals the field above
//	records      repeated: kind (1 byte, 1..255)
//	                       payload length (uvarint, at most MaxRecordSize)
//	                       payload bytes
//	end marker   1 byte    0
//	count        uvarint   number of records written
//	checksum     4 bytes   CRC-32C (Castagnoli) of every byte from the magic
//	                       through the count, big-endian
//
// The stream must end right after the checksum; trailing bytes are treated as
// corruption because a snapshot is always stored as its own file or stream.
//
// CRC-32C is used rather than a cryptographic hash because the goal is to
// catch storage and transfer damage cheaply, not tampering; it detects every
// single-byte change and every burst of up to 32 bits. Structural checks
// (lengths, limits, end marker, record count, minimal varints, header
// consistency) catch damage that shifts record boundaries before the checksum
// is even reached.
//
// The version is a major version: readers refuse any version they do not
// know. Versions 1 and 2 frame records alike; the version also says how the
// record payloads are laid out (fsm record layout 1 or 2, see fsm.RecordLayout),
// so a reader accepts both and decodes each stream's records by its own
// layout, while writers write the newest. Adding optional JSON header fields does not require a new version,
// since unknown header fields are ignored by older readers.
package snapshot

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
)

const (
	// FormatVersion is the format version written by Writer.
	FormatVersion uint16 = 2

	// OldestFormatVersion is the oldest version Reader accepts (release
	// 2fa8555 and before wrote version 1).
	OldestFormatVersion uint16 = 1

	// MaxRecordSize bounds a record payload so a damaged length prefix cannot
	// make a reader allocate an absurd amount of memory.
	MaxRecordSize = 64 << 20

	// MaxHeaderSize bounds the JSON header for the same reason.
	MaxHeaderSize = 1 << 20
)

// magic identifies a raftcat snapshot stream.
const magic = "RAFTCAT\x00"

const (
	endMarker   byte = 0
	bufSize          = 64 << 10
	maxUvarint       = binary.MaxVarintLen64
	readChunk        = 1 << 20 // initial allocation for large payloads
	keepBufSize      = 4 << 20 // larger scratch buffers are not retained
)

var (
	// ErrCorrupt is wrapped by every error caused by a damaged or truncated
	// stream, so callers can tell bad data from I/O failures.
	ErrCorrupt = errors.New("corrupt snapshot")
	// ErrNotSnapshot means the stream does not start with the raftcat magic.
	ErrNotSnapshot = errors.New("not a raftcat snapshot")
	// ErrUnsupportedVersion means the stream uses a format version this code
	// cannot read.
	ErrUnsupportedVersion = errors.New("unsupported snapshot format version")
)

var (
	castagnoli      = crc32.MakeTable(crc32.Castagnoli)
	errWriterClosed = errors.New("snapshot: writer is closed")
)

// Header describes the state a snapshot holds. It is stored as JSON so new
// optional fields can be added without a format version bump.
type Header struct {
	// Version is the stream format version; Writer sets it, callers need not.
	Version uint16 `json:"version"`
	// Index and Term are the Raft log position the state corresponds to.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// CreatedUnixMs is informational only. It is not filled in automatically
	// so that identical input produces identical bytes.
	CreatedUnixMs int64 `json:"created_unix_ms"`
	// Meta is free-form and optional.
	Meta map[string]string `json:"meta,omitempty"`
}

// Writer streams a snapshot to an io.Writer, computing the checksum as it
// goes so nothing but the bufio buffer is held in memory.
type Writer struct {
	bw      *bufio.Writer
	crc     uint32
	count   uint64
	scratch [1 + maxUvarint]byte
	err     error // sticky: once a write fails the stream is unusable
	closed  bool
}

// NewWriter writes the magic and header to w. h.Version is overwritten with
// FormatVersion.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Version = FormatVersion
	js, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("snapshot: encode header: %w", err)
	}
	if len(js) > MaxHeaderSize {
		return nil, fmt.Errorf("snapshot: header is %d bytes, limit is %d", len(js), MaxHeaderSize)
	}
	sw := &Writer{bw: bufio.NewWriterSize(w, bufSize)}
	var pre [len(magic) + 2 + 4]byte
	copy(pre[:], magic)
	binary.BigEndian.PutUint16(pre[len(magic):], FormatVersion)
	binary.BigEndian.PutUint32(pre[len(magic)+2:], uint32(len(js)))
	sw.write(pre[:])
	sw.write(js)
	if sw.err != nil {
		return nil, sw.err
	}
	return sw, nil
}

// write appends p to the stream and the running checksum.
func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, p)
	if _, err := w.bw.Write(p); err != nil {
		w.err = fmt.Errorf("snapshot: write: %w", err)
	}
}

// WriteRecord appends one record. kind 0 is reserved for the end marker.
// payload is not retained after the call returns.
func (w *Writer) WriteRecord(kind byte, payload []byte) error {
	if w.closed {
		return errWriterClosed
	}
	if w.err != nil {
		return w.err
	}
	if kind == endMarker {
		return errors.New("snapshot: record kind 0 is reserved")
	}
	if len(payload) > MaxRecordSize {
		return fmt.Errorf("snapshot: record payload is %d bytes, limit is %d", len(payload), MaxRecordSize)
	}
	w.scratch[0] = kind
	n := binary.PutUvarint(w.scratch[1:], uint64(len(payload)))
	w.write(w.scratch[:1+n])
	w.write(payload)
	if w.err != nil {
		return w.err
	}
	w.count++
	return nil
}

// Close writes the end marker, record count and checksum and flushes. It
// does not close the underlying writer, which the caller owns.
func (w *Writer) Close() error {
	if w.closed {
		return errWriterClosed
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	w.scratch[0] = endMarker
	n := binary.PutUvarint(w.scratch[1:], w.count)
	w.write(w.scratch[:1+n])
	if w.err != nil {
		return w.err
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], w.crc)
	if _, err := w.bw.Write(sum[:]); err != nil {
		w.err = fmt.Errorf("snapshot: write: %w", err)
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("snapshot: flush: %w", err)
		return w.err
	}
	return nil
}

// Reader decodes a snapshot stream record by record. It verifies the record
// count and checksum once the end marker is reached, so a caller must read
// until Next returns io.EOF before trusting anything it has applied.
type Reader struct {
	br     *bufio.Reader
	crc    uint32
	hdr    Header
	count  uint64
	offset int64 // bytes consumed, for error messages
	buf    []byte
	one    [1]byte
	err    error // sticky; io.EOF after a verified end
}

// NewReader reads and checks the magic, version and header of r.
func NewReader(r io.Reader) (*Reader, error) {
	sr := &Reader{br: bufio.NewReaderSize(r, bufSize)}

	var m [len(magic)]byte
	n, err := io.ReadFull(sr.br, m[:])
	if err != nil {
		if isEOF(err) && string(m[:n]) == magic[:n] {
			return nil, sr.truncated("magic")
		}
		if isEOF(err) {
			return nil, ErrNotSnapshot
		}
		return nil, fmt.Errorf("snapshot: read: %w", err)
	}
	if string(m[:]) != magic {
		return nil, ErrNotSnapshot
	}
	sr.consumed(m[:])

	var pre [2 + 4]byte
	if err := sr.readFull(pre[:], "header"); err != nil {
		return nil, err
	}
	version := binary.BigEndian.Uint16(pre[:2])
	if version < OldestFormatVersion || version > FormatVersion {
		return nil, fmt.Errorf("%w %d", ErrUnsupportedVersion, version)
	}
	hlen := binary.BigEndian.Uint32(pre[2:])
	if hlen > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header length %d exceeds limit %d", ErrCorrupt, hlen, MaxHeaderSize)
	}
	js, err := sr.readPayload(uint64(hlen), "header")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(js, &sr.hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	if sr.hdr.Version != version {
		return nil, fmt.Errorf("%w: header version %d does not match stream version %d", ErrCorrupt, sr.hdr.Version, version)
	}
	return sr, nil
}

// Header returns the snapshot header. The Meta map is a copy.
func (r *Reader) Header() Header {
	h := r.hdr
	h.Meta = maps.Clone(r.hdr.Meta)
	return h
}

// Next returns the next record. The payload aliases an internal buffer and
// is only valid until the next call to Next; copy it to keep it. At the end
// of a fully verified stream Next returns io.EOF; any other error is
// permanent and is returned again by later calls.
func (r *Reader) Next() (kind byte, payload []byte, err error) {
	if r.err != nil {
		return 0, nil, r.err
	}
	kind, payload, err = r.next()
	if err != nil {
		r.err = err
		return 0, nil, err
	}
	return kind, payload, nil
}

func (r *Reader) next() (byte, []byte, error) {
	kind, err := r.readByte("record kind")
	if err != nil {
		return 0, nil, err
	}
	if kind == endMarker {
		return 0, nil, r.finish()
	}
	n, err := r.readUvarint("record length")
	if err != nil {
		return 0, nil, err
	}
	if n > MaxRecordSize {
		return 0, nil, fmt.Errorf("%w: record %d length %d exceeds limit %d", ErrCorrupt, r.count, n, MaxRecordSize)
	}
	payload, err := r.readPayload(n, "record payload")
	if err != nil {
		return 0, nil, err
	}
	r.count++
	return kind, payload, nil
}

// finish checks the trailer after the end marker has been consumed.
func (r *Reader) finish() error {
	count, err := r.readUvarint("record count")
	if err != nil {
		return err
	}
	if count != r.count {
		return fmt.Errorf("%w: trailer says %d records, stream has %d", ErrCorrupt, count, r.count)
	}
	want := r.crc
	var sum [4]byte
	if err := r.readFull(sum[:], "checksum"); err != nil {
		return err
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return fmt.Errorf("%w: checksum mismatch: stored %08x, computed %08x", ErrCorrupt, got, want)
	}
	switch _, err := r.br.ReadByte(); {
	case err == nil:
		return fmt.Errorf("%w: unexpected data after checksum at offset %d", ErrCorrupt, r.offset)
	case err != io.EOF:
		return fmt.Errorf("snapshot: read: %w", err)
	}
	return io.EOF
}

// Verify reads an entire stream and checks everything, returning the header
// and the number of records of each kind. On error the header and counts
// reflect what was read before the failure.
func Verify(r io.Reader) (Header, map[byte]int, error) {
	counts := make(map[byte]int)
	sr, err := NewReader(r)
	if err != nil {
		return Header{}, counts, err
	}
	for {
		kind, _, err := sr.Next()
		if err == io.EOF {
			return sr.Header(), counts, nil
		}
		if err != nil {
			return sr.Header(), counts, err
		}
		counts[kind]++
	}
}

func (r *Reader) consumed(p []byte) {
	r.crc = crc32.Update(r.crc, castagnoli, p)
	r.offset += int64(len(p))
}

func (r *Reader) truncated(what string) error {
	return fmt.Errorf("%w: truncated in %s at offset %d after %d records", ErrCorrupt, what, r.offset, r.count)
}

// ioErr classifies a read failure: running out of input is truncation, any
// other error is an I/O problem of the underlying reader, not corruption.
func (r *Reader) ioErr(err error, what string) error {
	if isEOF(err) {
		return r.truncated(what)
	}
	return fmt.Errorf("snapshot: read %s: %w", what, err)
}

func isEOF(err error) bool {
	return err == io.EOF || err == io.ErrUnexpectedEOF
}

func (r *Reader) readByte(what string) (byte, error) {
	b, err := r.br.ReadByte()
	if err != nil {
		return 0, r.ioErr(err, what)
	}
	r.one[0] = b
	r.consumed(r.one[:])
	return b, nil
}

func (r *Reader) readFull(p []byte, what string) error {
	n, err := io.ReadFull(r.br, p)
	r.consumed(p[:n])
	if err != nil {
		return r.ioErr(err, what)
	}
	return nil
}

// readUvarint decodes a minimally encoded uvarint; a non-minimal encoding
// would let two different byte strings mean the same stream.
func (r *Reader) readUvarint(what string) (uint64, error) {
	var x uint64
	var s uint
	for i := 0; i < maxUvarint; i++ {
		b, err := r.readByte(what)
		if err != nil {
			return 0, err
		}
		if i == maxUvarint-1 && b > 1 {
			break // overflow
		}
		if b < 0x80 {
			if b == 0 && i > 0 {
				return 0, fmt.Errorf("%w: non-minimal varint in %s at offset %d", ErrCorrupt, what, r.offset)
			}
			return x | uint64(b)<<s, nil
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, fmt.Errorf("%w: varint overflow in %s at offset %d", ErrCorrupt, what, r.offset)
}

// readPayload reads n bytes into the reusable buffer. For sizes beyond the
// current buffer it grows with the data actually received, so a damaged
// length on a short stream cannot force a large allocation up front.
func (r *Reader) readPayload(n uint64, what string) ([]byte, error) {
	if cap(r.buf) > keepBufSize && n <= keepBufSize {
		r.buf = nil
	}
	if n <= uint64(cap(r.buf)) {
		buf := r.buf[:n]
		if err := r.readFull(buf, what); err != nil {
			return nil, err
		}
		return buf, nil
	}
	buf := make([]byte, 0, min(n, readChunk))
	for uint64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, 2*uint64(cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		chunk := buf[len(buf):cap(buf)]
		if err := r.readFull(chunk, what); err != nil {
			return nil, err
		}
		buf = buf[:cap(buf)]
	}
	r.buf = buf
	return buf, nil
}
