package raftlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// segment is one segment file: the records of base, base+1, … from
// offset 0, then zeros, then the trailer (mark.go). Its file is as large
// as it will grow (filled with zeros when made), so a write never changes
// the file's size and its sync flushes data only.
type segment struct {
	seq, base uint64 // seq orders segments and tells generations apart
	path      string
	f         file
	size      int64
	limit     int64    // records end before it (the trailer's start; size without one)
	offs      []int64  // offs[i]: the offset of record base+i; the last one is where the next goes
	crcs      []uint32 // crcs[i]: record base+i's crc
	dirty     bool     // written since the last sync (guarded by Store.mu)
	// The newest synced-through mark, and whether it was written since
	// the segment's last sync (guarded by Store.fmu once open).
	mark         syncMark
	markUnsynced bool
}

func (g *segment) count() uint64 { return uint64(len(g.crcs)) }
func (g *segment) end() int64    { return g.offs[len(g.offs)-1] }

// lastIndex is the segment's last index (base-1 when it is empty).
func (g *segment) lastIndex() uint64 { return g.base + g.count() - 1 }

// next is the index the segment's next record must have.
func (g *segment) next() uint64 { return g.base + g.count() }

// tail is the chain value the next record continues from.
func (g *segment) tail() uint32 { return g.chain(g.count()) }

// chain is the chain value record base+k continues from.
func (g *segment) chain(k uint64) uint32 {
	if k == 0 {
		return seed(g.seq, g.base)
	}
	return g.crcs[k-1]
}

const segmentExt = ".seg"

// segmentName names a segment file by sequence number and base index.
func segmentName(seq, base uint64) string { return fmt.Sprintf("%020d-%020d%s", seq, base, segmentExt) }

type segmentID struct{ seq, base uint64 }

// listSegments returns the segment files in dir, by sequence number.
func listSegments(fs fsys, dir string) ([]segmentID, error) {
	paths, err := fs.Glob(filepath.Join(dir, "*"+segmentExt))
	if err != nil {
		return nil, err
	}
	var ids []segmentID
	for _, p := range paths {
		var id segmentID
		name := filepath.Base(p)
		if _, err := fmt.Sscanf(name, "%020d-%020d"+segmentExt, &id.seq, &id.base); err != nil || id.seq == 0 || id.base == 0 ||
			name != segmentName(id.seq, id.base) {
			return nil, fmt.Errorf("raftlog: %s is not a segment file's name", name)
		}
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].seq < ids[j].seq })
	return ids, nil
}

// openSegment opens a segment file and reads its records, up to the
// first that is not whole and chained to the one before (the zeros after
// the last record, a write a crash tore, or damage: see checkEnds).
func openSegment(fs fsys, dir string, id segmentID, readOnly bool) (*segment, error) {
	path := filepath.Join(dir, segmentName(id.seq, id.base))
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := fs.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	g := &segment{seq: id.seq, base: id.base, path: path, f: f, size: st.Size(), limit: st.Size(), offs: []int64{0}}
	if err := g.readTrailer(); err != nil {
		f.Close()
		return nil, fmt.Errorf("raftlog: read %s: %w", path, err)
	}
	if err := g.scan(); err != nil {
		f.Close()
		return nil, fmt.Errorf("raftlog: read %s: %w", path, err)
	}
	return g, nil
}

func (g *segment) scan() error {
	r := bufio.NewReaderSize(io.NewSectionReader(g.f, 0, g.limit), 1<<20)
	var rec []byte
	for off := int64(0); off+headerLen <= g.limit; {
		rec = append(rec[:0], make([]byte, headerLen)...)
		if _, err := io.ReadFull(r, rec); err != nil {
			return err
		}
		n := recordSize(rec)
		if n == 0 || off+headerLen+int64(n) > g.limit {
			return nil
		}
		rec = append(rec, make([]byte, n)...)
		if _, err := io.ReadFull(r, rec[headerLen:]); err != nil {
			return err
		}
		crc, ok := checkRecord(rec, g.tail())
		if !ok || recordIndex(rec) != g.next() {
			return nil
		}
		off += int64(headerLen + n)
		g.offs, g.crcs = append(g.offs, off), append(g.crcs, crc)
	}
	return nil
}

// read returns record i's bytes (header included), checked against its
// checksum.
func (g *segment) read(i uint64) ([]byte, error) {
	k := i - g.base
	rec := make([]byte, g.offs[k+1]-g.offs[k])
	if _, err := g.f.ReadAt(rec, g.offs[k]); err != nil {
		return nil, fmt.Errorf("raftlog: read index %d from %s: %w", i, g.path, err)
	}
	if _, ok := checkRecord(rec, g.chain(k)); !ok || recordIndex(rec) != i {
		return nil, fmt.Errorf("%w: %s: the record of index %d at offset %d does not read back; %s", ErrDamaged, g.path, i, g.offs[k], rebuild)
	}
	return rec, nil
}

// zeroFrom zeroes the records from index i on, so they stay dropped after
// a restart whatever is written over them. The caller then cuts them
// (cut), once no reader can want them.
func (g *segment) zeroFrom(i uint64) error { return g.zero(g.offs[i-g.base], g.end()) }

// zero writes zeros over the bytes from..to.
func (g *segment) zero(from, to int64) error {
	zeros := make([]byte, min(to-from, 1<<20))
	for off := from; off < to; off += int64(len(zeros)) {
		if _, err := g.f.WriteAt(zeros[:min(int64(len(zeros)), to-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// clearPastEnd zeroes what lies past the last valid record, and syncs:
// the rest of a torn write, records of a chain cut there. Nothing written
// at the end later can then make them valid again, and what is written
// there later goes over zeros, so that a crash tearing it cannot pass for
// damage. A segment with only zeros past its end is left as it is.
func (g *segment) clearPastEnd() error {
	last, err := g.lastNonZero(g.end())
	if err != nil || last < 0 {
		return err
	}
	if err := g.zero(g.end(), last+1); err != nil {
		return err
	}
	return g.f.Datasync()
}

// lastNonZero is the offset of the last non-zero byte of the segment's
// records from 'from' on (-1: none).
func (g *segment) lastNonZero(from int64) (int64, error) {
	last := int64(-1)
	buf := make([]byte, 1<<20)
	for off := from; off < g.limit; off += int64(len(buf)) {
		n, err := g.f.ReadAt(buf[:min(int64(len(buf)), g.limit-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				last = off + int64(i)
				break
			}
		}
	}
	return last, nil
}

// cut forgets the records from index i on.
func (g *segment) cut(i uint64) {
	k := i - g.base
	g.offs, g.crcs = g.offs[:k+1], g.crcs[:k]
}

// makeZeroFile writes a segment file of size zeros (but for the
// trailer's format name at its end) in dir under a temporary name and
// syncs it.
func makeZeroFile(fs fsys, dir string, size int64) (string, error) {
	f, err := fs.CreateTemp(dir, "segment-*.tmp")
	if err != nil {
		return "", err
	}
	zeros := make([]byte, 1<<20)
	body := size - int64(len(trailerMagic))
	for off := int64(0); off < body && err == nil; off += int64(len(zeros)) {
		_, err = f.Write(zeros[:min(int64(len(zeros)), body-off)])
	}
	if err == nil {
		_, err = f.Write([]byte(trailerMagic))
	}
	return f.Name(), closeSynced(fs, f, err)
}

// closeSynced syncs and closes f after writes that ended with err, and
// removes it if anything failed.
func closeSynced(fs fsys, f file, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fs.Remove(f.Name())
	}
	return err
}

// The cleared file holds the sequence number of the newest segment when
// the whole log was last deleted: no segment up to it is part of the log.
// It is written before those segments are removed, so a crash while
// removing them leaves no part of the old log behind.
const clearedFile = "cleared"

func readCleared(fs fsys, dir string) (uint64, error) {
	b, err := fs.ReadFile(filepath.Join(dir, clearedFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 12 || crc32.Checksum(b[:8], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("%w: %s does not read back (it was written whole and synced); %s", ErrDamaged, filepath.Join(dir, clearedFile), rebuild)
	}
	return binary.LittleEndian.Uint64(b), nil
}

// writeCleared replaces the cleared file durably.
func writeCleared(fs fsys, dir string, seq uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, seq)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return writeFileSynced(fs, dir, clearedFile, b)
}

// writeFileSynced replaces dir's file name with b durably: a synced
// temporary file renamed over it, then the directory synced.
func writeFileSynced(fs fsys, dir, name string, b []byte) error {
	f, err := fs.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err := closeSynced(fs, f, err); err != nil {
		return err
	}
	if err := fs.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// removeTemps removes temporary files a crash left behind.
func removeTemps(fs fsys, dir string) error {
	temps, err := fs.Glob(filepath.Join(dir, "*.tmp"))
	for _, t := range temps {
		err = errors.Join(err, fs.Remove(t))
	}
	return err
}
