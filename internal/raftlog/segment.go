package raftlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// segment is one segment file: the records of base, base+1, … from
// offset 0, then zeros. Its file is as large as it will grow (filled with
// zeros when made), so a write never changes the file's size and its sync
// flushes data only.
type segment struct {
	base uint64
	path string
	f    *os.File
	size int64
	offs []int64 // offs[i]: the offset of record base+i; the last one is where the next goes
	tail uint32  // the chain value the next record continues from
}

func (g *segment) count() uint64 { return uint64(len(g.offs) - 1) }
func (g *segment) end() int64    { return g.offs[len(g.offs)-1] }

// lastIndex is the segment's last index (base-1 when it is empty).
func (g *segment) lastIndex() uint64 { return g.base + g.count() - 1 }

func (g *segment) holds(i uint64) bool { return i >= g.base && i-g.base < g.count() }

const segmentExt = ".seg"

func segmentName(base uint64) string { return fmt.Sprintf("%020d%s", base, segmentExt) }

// listSegments returns the segment files in dir by base, oldest first.
func listSegments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segmentExt)
		if !ok {
			continue
		}
		base, err := strconv.ParseUint(name, 10, 64)
		if err != nil || base == 0 {
			return nil, fmt.Errorf("raftlog: %s is not a segment file's name", e.Name())
		}
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// openSegment opens a segment file and reads its records, up to the
// first that is not whole and chained to the one before (a write a crash
// cut short, or the zeros after the last record).
func openSegment(dir string, base uint64, readOnly bool) (*segment, error) {
	path := filepath.Join(dir, segmentName(base))
	flag := os.O_RDWR | syscall.O_DSYNC
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	g := &segment{base: base, path: path, f: f, size: st.Size(), offs: []int64{0}, tail: seed(base)}
	if err := g.scan(); err != nil {
		f.Close()
		return nil, fmt.Errorf("raftlog: read %s: %w", path, err)
	}
	return g, nil
}

func (g *segment) scan() error {
	r := bufio.NewReaderSize(io.NewSectionReader(g.f, 0, g.size), 1<<20)
	var rec []byte
	for off := int64(0); off+headerLen <= g.size; {
		rec = append(rec[:0], make([]byte, headerLen)...)
		if _, err := io.ReadFull(r, rec); err != nil {
			return err
		}
		n := recordSize(rec)
		if n == 0 || off+headerLen+int64(n) > g.size {
			return nil
		}
		rec = append(rec, make([]byte, n)...)
		if _, err := io.ReadFull(r, rec[headerLen:]); err != nil {
			return err
		}
		crc, ok := checkRecord(rec, g.tail)
		if !ok || recordIndex(rec) != g.base+g.count() {
			return nil
		}
		off += int64(headerLen + n)
		g.offs, g.tail = append(g.offs, off), crc
	}
	return nil
}

// read returns record i's bytes (header included).
func (g *segment) read(i uint64) ([]byte, error) {
	k := i - g.base
	rec := make([]byte, g.offs[k+1]-g.offs[k])
	if _, err := g.f.ReadAt(rec, g.offs[k]); err != nil {
		return nil, fmt.Errorf("raftlog: read index %d from %s: %w", i, g.path, err)
	}
	if len(rec) < headerLen+fixedLen || recordIndex(rec) != i {
		return nil, fmt.Errorf("raftlog: %s does not hold index %d where it did", g.path, i)
	}
	return rec, nil
}

// truncate drops the records from index i on. It zeroes them, so they
// stay dropped after a restart whatever is written over them.
func (g *segment) truncate(i uint64) error {
	k := i - g.base
	from, to := g.offs[k], g.end()
	g.offs = g.offs[:k+1]
	zeros := make([]byte, min(to-from, 1<<20))
	for off := from; off < to; off += int64(len(zeros)) {
		if _, err := g.f.WriteAt(zeros[:min(int64(len(zeros)), to-off)], off); err != nil {
			return err
		}
	}
	g.tail = seed(g.base)
	if k == 0 {
		return nil
	}
	var crc [4]byte
	if _, err := g.f.ReadAt(crc[:], g.offs[k-1]); err != nil {
		return err
	}
	g.tail = binary.LittleEndian.Uint32(crc[:])
	return nil
}

// makeZeroFile writes a file of size zeros in dir under a temporary name
// and syncs it.
func makeZeroFile(dir string, size int64) (string, error) {
	f, err := os.CreateTemp(dir, "segment-*.tmp")
	if err != nil {
		return "", err
	}
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size && err == nil; off += int64(len(zeros)) {
		_, err = f.Write(zeros[:min(int64(len(zeros)), size-off)])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// removeTemps removes zero files a crash left behind.
func removeTemps(dir string) error {
	temps, err := filepath.Glob(filepath.Join(dir, "segment-*.tmp"))
	for _, t := range temps {
		err = errors.Join(err, os.Remove(t))
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
