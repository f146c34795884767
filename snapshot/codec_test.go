package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

type record struct {
	kind    byte
	payload []byte
}

func encode(t testing.TB, h Header, recs []record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	for _, rec := range recs {
		if err := w.WriteRecord(rec.kind, rec.payload); err != nil {
			t.Fatalf("WriteRecord: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

func readAll(r io.Reader) (Header, []record, error) {
	sr, err := NewReader(r)
	if err != nil {
		return Header{}, nil, err
	}
	var recs []record
	for {
		kind, payload, err := sr.Next()
		if err == io.EOF {
			return sr.Header(), recs, nil
		}
		if err != nil {
			return sr.Header(), recs, err
		}
		recs = append(recs, record{kind, bytes.Clone(payload)})
	}
}

func smallHeader() Header {
	return Header{Index: 42, Term: 7, CreatedUnixMs: 1700000000123, Meta: map[string]string{"node": "n1", "cluster": "c"}}
}

func smallRecords() []record {
	return []record{
		{1, []byte("table-a")},
		{2, nil},
		{1, []byte("table-b")},
		{255, []byte{0, 1, 2}},
	}
}

func smallStream(t testing.TB) []byte {
	return encode(t, smallHeader(), smallRecords())
}

// fixChecksum recomputes the trailer checksum so tests can reach structural
// checks that would otherwise be masked by the checksum.
func fixChecksum(data []byte) []byte {
	out := bytes.Clone(data)
	n := len(out) - 4
	binary.BigEndian.PutUint32(out[n:], crc32.Checksum(out[:n], castagnoli))
	return out
}

func isSentinel(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotSnapshot) || errors.Is(err, ErrUnsupportedVersion)
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []byte{1, 2, 3, 200, 255}
	var recs []record
	for i := range 2000 {
		var p []byte
		switch i % 7 {
		case 0:
			p = nil
		case 1:
			p = []byte{}
		default:
			p = make([]byte, rng.IntN(300))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
		}
		recs = append(recs, record{kinds[i%len(kinds)], p})
	}
	big := make([]byte, 1<<20+17)
	for j := range big {
		big[j] = byte(rng.Uint32())
	}
	recs = append(recs[:1000], append([]record{{3, big}}, recs[1000:]...)...)

	h := Header{Index: 1<<63 + 5, Term: 99, CreatedUnixMs: -1, Meta: map[string]string{"a": "b", "<&>": "\x00ü"}}
	data := encode(t, h, recs)

	wantCounts := map[byte]int{}
	for _, rec := range recs {
		wantCounts[rec.kind]++
	}

	readers := map[string]func() io.Reader{
		"plain":   func() io.Reader { return bytes.NewReader(data) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
		"half":    func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
		"dataerr": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			gotH, gotRecs, err := readAll(mk())
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			want := h
			want.Version = FormatVersion
			if fmt.Sprint(gotH) != fmt.Sprint(want) {
				t.Fatalf("header = %+v, want %+v", gotH, want)
			}
			if len(gotRecs) != len(recs) {
				t.Fatalf("got %d records, want %d", len(gotRecs), len(recs))
			}
			for i := range recs {
				if gotRecs[i].kind != recs[i].kind || !bytes.Equal(gotRecs[i].payload, recs[i].payload) {
					t.Fatalf("record %d differs: kind %d/%d len %d/%d", i,
						gotRecs[i].kind, recs[i].kind, len(gotRecs[i].payload), len(recs[i].payload))
				}
			}
			vh, counts, err := Verify(mk())
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if vh.Index != h.Index || fmt.Sprint(counts) != fmt.Sprint(wantCounts) {
				t.Fatalf("Verify = %+v %v, want counts %v", vh, counts, wantCounts)
			}
		})
	}
}

func TestNextAfterEOFAndHeaderCopy(t *testing.T) {
	r, err := NewReader(bytes.NewReader(smallStream(t)))
	if err != nil {
		t.Fatal(err)
	}
	r.Header().Meta["node"] = "changed"
	if r.Header().Meta["node"] != "n1" {
		t.Fatal("Header() exposes internal Meta map")
	}
	for {
		if _, _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("second Next after end = %v, want io.EOF", err)
	}
}

func TestDeterministic(t *testing.T) {
	h := smallHeader()
	for i := range 50 {
		h.Meta[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
	}
	a := encode(t, h, smallRecords())
	for range 20 {
		if b := encode(t, h, smallRecords()); !bytes.Equal(a, b) {
			t.Fatal("encoding the same input twice produced different bytes")
		}
	}
	// The caller's Version is ignored, so it cannot change the output.
	h.Version = 9
	if b := encode(t, h, smallRecords()); !bytes.Equal(a, b) {
		t.Fatal("Header.Version supplied by caller changed the output")
	}
	if !bytes.HasPrefix(a, []byte("RAFTCAT\x00\x00\x02")) {
		t.Fatalf("unexpected prefix %q", a[:10])
	}
}

func TestTruncation(t *testing.T) {
	data := smallStream(t)
	for i := range len(data) {
		cut := data[:i]
		_, _, err := Verify(bytes.NewReader(cut))
		checkTruncErr(t, i, err)
		_, _, err = readAll(iotest.OneByteReader(bytes.NewReader(cut)))
		checkTruncErr(t, i, err)
	}
}

func checkTruncErr(t *testing.T, i int, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("cut at %d: no error", i)
	case i < len(magic) && errors.Is(err, ErrNotSnapshot):
	case !errors.Is(err, ErrCorrupt):
		t.Fatalf("cut at %d: error %v does not wrap ErrCorrupt", i, err)
	case !strings.Contains(err.Error(), "truncated"):
		t.Fatalf("cut at %d: error %q does not mention truncation", i, err)
	}
}

func TestByteFlips(t *testing.T) {
	data := smallStream(t)
	for i := range data {
		for x := 1; x < 256; x++ {
			bad := bytes.Clone(data)
			bad[i] ^= byte(x)
			_, _, err := Verify(bytes.NewReader(bad))
			if err == nil {
				t.Fatalf("flip %#x at offset %d went undetected", x, i)
			}
			if !isSentinel(err) {
				t.Fatalf("flip %#x at offset %d: unclassified error %v", x, i, err)
			}
		}
	}
}

func TestChecksumMismatch(t *testing.T) {
	data := smallStream(t)
	bad := bytes.Clone(data)
	bad[len(bad)-1] ^= 0x40
	_, _, err := Verify(bytes.NewReader(bad))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("got %v, want checksum error wrapping ErrCorrupt", err)
	}
	// A payload change is also reported as a checksum mismatch.
	bad = bytes.Clone(data)
	i := bytes.Index(bad, []byte("table-b"))
	bad[i] = 'T'
	_, _, err = Verify(bytes.NewReader(bad))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("got %v, want checksum error wrapping ErrCorrupt", err)
	}
}

func TestStructuralErrors(t *testing.T) {
	data := smallStream(t)
	trailer := len(data) - 4 - 1 - 1 // end marker, count (1 byte), checksum

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"trailing data", append(bytes.Clone(data), 0), "after checksum"},
		{"count mismatch", func() []byte {
			b := bytes.Clone(data)
			b[trailer+1]++
			return fixChecksum(b)
		}(), "trailer says"},
		{"non-minimal count", func() []byte {
			b := append(bytes.Clone(data[:trailer+1]), 0x84, 0x00, 0, 0, 0, 0)
			return fixChecksum(b)
		}(), "non-minimal"},
		{"varint overflow", func() []byte {
			b := append(bytes.Clone(data[:trailer]), 1)
			b = append(b, bytes.Repeat([]byte{0xff}, 10)...)
			return b
		}(), "overflow"},
		{"header version mismatch", func() []byte {
			b := bytes.Clone(data)
			i := bytes.Index(b, []byte(`"version":2`))
			b[i+len(`"version":`)] = '1'
			return fixChecksum(b)
		}(), "header version"},
		{"header not json", func() []byte {
			b := bytes.Clone(data)
			b[14] = '['
			return b
		}(), "header"},
		{"huge header length", func() []byte {
			b := bytes.Clone(data)
			binary.BigEndian.PutUint32(b[10:], 0xffffffff)
			return b
		}(), "header length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Verify(bytes.NewReader(tc.data))
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrCorrupt mentioning %q", err, tc.want)
			}
		})
	}
}

func TestBadMagic(t *testing.T) {
	data := smallStream(t)
	for _, in := range [][]byte{
		[]byte("PK\x03\x04 definitely a zip file"),
		[]byte("hello"),
		append([]byte("RAFTCAX\x00"), data[8:]...),
	} {
		_, _, err := Verify(bytes.NewReader(in))
		if !errors.Is(err, ErrNotSnapshot) || !strings.Contains(err.Error(), "not a raftcat snapshot") {
			t.Fatalf("%q: got %v, want ErrNotSnapshot", in[:5], err)
		}
	}
}

func TestFutureVersion(t *testing.T) {
	for _, v := range []uint16{0, 3, 0xffff} {
		data := smallStream(t)
		binary.BigEndian.PutUint16(data[8:], v)
		_, _, err := Verify(bytes.NewReader(data))
		want := fmt.Sprintf("unsupported snapshot format version %d", v)
		if !errors.Is(err, ErrUnsupportedVersion) || err.Error() != want {
			t.Fatalf("version %d: got %v, want %q", v, err, want)
		}
	}
}

func TestOversizedLength(t *testing.T) {
	full := encode(t, smallHeader(), nil)
	prefix := full[:len(full)-6] // strip end marker, count and checksum

	lengths := []uint64{MaxRecordSize + 1, 1 << 40, 1<<64 - 1}
	for _, n := range lengths {
		in := append(bytes.Clone(prefix), 1)
		in = binary.AppendUvarint(in, n)
		in = append(in, bytes.Repeat([]byte{7}, 1000)...)
		err := allocCheck(t, in)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "exceeds limit") {
			t.Fatalf("length %d: got %v, want ErrCorrupt about the limit", n, err)
		}
	}

	// A length within the limit on a stream that ends early must not be
	// allocated in full either.
	in := append(bytes.Clone(prefix), 1)
	in = binary.AppendUvarint(in, MaxRecordSize)
	in = append(in, bytes.Repeat([]byte{7}, 1000)...)
	if err := allocCheck(t, in); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("got %v, want truncation", err)
	}
}

// allocCheck verifies in and fails if doing so allocated anywhere near a
// full record's worth of memory.
func allocCheck(t *testing.T, in []byte) error {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := Verify(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
		t.Fatalf("verifying allocated %d bytes", d)
	}
	return err
}

func TestWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(0, []byte("x")); err == nil {
		t.Fatal("kind 0 accepted")
	}
	if err := w.WriteRecord(1, make([]byte, MaxRecordSize+1)); err == nil {
		t.Fatal("oversized payload accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(1, nil); err == nil {
		t.Fatal("write after Close accepted")
	}
	if err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	// Rejected records must not leave a trace in the stream.
	if _, counts, err := Verify(&buf); err != nil || len(counts) != 0 {
		t.Fatalf("Verify = %v, %v", counts, err)
	}

	if _, err := NewWriter(&buf, Header{Meta: map[string]string{"x": strings.Repeat("y", MaxHeaderSize)}}); err == nil {
		t.Fatal("oversized header accepted")
	}

	boom := errors.New("disk full")
	w, err = NewWriter(&failWriter{after: 100, err: boom}, Header{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; err == nil && i < 100000; i++ {
		err = w.WriteRecord(1, make([]byte, 100))
	}
	if err == nil {
		err = w.Close()
	}
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}

type failWriter struct {
	after int
	err   error
}

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after -= len(p); f.after < 0 {
		return 0, f.err
	}
	return len(p), nil
}

// closeRecorder fails the test if the Writer closes what it does not own.
type closeRecorder struct {
	bytes.Buffer
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestCloseLeavesUnderlyingOpen(t *testing.T) {
	var c closeRecorder
	w, err := NewWriter(&c, Header{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if c.closed {
		t.Fatal("Close closed the underlying writer")
	}
}

func TestReaderIOError(t *testing.T) {
	data := smallStream(t)
	boom := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(data[:30]), iotest.ErrReader(boom))
	_, _, err := Verify(r)
	if !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want the I/O error and not ErrCorrupt", err)
	}
}

func TestStreamingPipe(t *testing.T) {
	const n = 100_000
	const size = 100
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := func() error {
			w, err := NewWriter(pw, Header{Index: n, Term: 1})
			if err != nil {
				return err
			}
			p := make([]byte, size)
			for i := range n {
				binary.BigEndian.PutUint64(p, uint64(i))
				if err := w.WriteRecord(byte(i%3+1), p); err != nil {
					return err
				}
			}
			return w.Close()
		}()
		pw.CloseWithError(err)
		done <- err
	}()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	r, err := NewReader(pr)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().Index != n {
		t.Fatalf("header index %d", r.Header().Index)
	}
	i := 0
	for ; ; i++ {
		kind, p, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if kind != byte(i%3+1) || len(p) != size || binary.BigEndian.Uint64(p) != uint64(i) {
			t.Fatalf("record %d: kind %d len %d", i, kind, len(p))
		}
	}
	runtime.ReadMemStats(&after)
	if err := <-done; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if i != n {
		t.Fatalf("read %d records, want %d", i, n)
	}
	// The stream is about 10 MB; both ends together must allocate far less.
	if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
		t.Fatalf("streaming %d records allocated %d bytes", n, d)
	}
}

func FuzzReader(f *testing.F) {
	data := encode(f, smallHeader(), smallRecords())
	f.Add(data)
	f.Add(encode(f, Header{}, nil))
	f.Add([]byte{})
	f.Add([]byte(magic))
	f.Add(data[:len(data)/2])
	f.Add(data[:len(data)-1])
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 0xff
	f.Add(flipped)
	f.Fuzz(func(t *testing.T, in []byte) {
		_, counts, err := Verify(bytes.NewReader(in))
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("unclassified error for in-memory input: %v", err)
			}
			return
		}
		_, recs, err := readAll(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("Verify accepted what Reader rejects: %v", err)
		}
		total := 0
		for _, c := range counts {
			total += c
		}
		if total != len(recs) {
			t.Fatalf("Verify counted %d records, Reader read %d", total, len(recs))
		}
	})
}
