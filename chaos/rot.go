package chaos

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// Where a node keeps its raft log on its disk, relative to its data
// directory, and which of those files a fault aims at.

// logStore is the raft log store node i's data directory holds, found as
// the node finds it: raft-wal files, segment files, else raft.db.
func (c *LocalCluster) logStore(i int) string {
	raft := filepath.Join(c.Disk(i).Mountpoint(), "raft")
	for _, s := range []struct{ store, dir string }{{"wal", "wal"}, {"segments", "segments"}} {
		if _, err := os.Stat(filepath.Join(raft, s.dir)); err == nil {
			return s.store
		}
	}
	return "boltdb"
}

// logPattern matches node i's raft log files (a faultfs Fault.Path).
func (c *LocalCluster) logPattern(i int) string {
	switch c.logStore(i) {
	case "wal":
		return "raft/wal/*"
	case "segments":
		return "raft/segments/*.seg"
	}
	return "raft/raft.db"
}

// rotLen is how many bytes a bitrot fault flips.
const rotLen = 16

// rotRange picks the bytes of node i's oldest raft log file a bitrot
// fault flips, within what the node wrote long ago and synced: in the
// first half of the records of the oldest segment file, or of the used
// pages of raft.db (past its two meta pages) or the oldest raft-wal file.
// It returns the file's path relative to the data directory.
func (c *LocalCluster) rotRange(i int, rng *rand.Rand) (string, int64, int64, error) {
	mnt := c.Disk(i).Mountpoint()
	var rel string
	var spans []span
	var err error
	switch c.logStore(i) {
	case "segments":
		if rel, err = oldest(mnt, "raft/segments/*.seg"); err == nil {
			spans, err = segmentRecords(filepath.Join(mnt, rel))
		}
	case "wal":
		if rel, err = oldest(mnt, "raft/wal/*.wal"); err == nil {
			spans, err = usedPages(filepath.Join(mnt, rel), 0)
		}
	default:
		rel = "raft/raft.db"
		spans, err = usedPages(filepath.Join(mnt, rel), 2)
	}
	if err == nil && len(spans) == 0 {
		err = errors.New("nothing written yet")
	}
	if err != nil {
		return "", 0, 0, fmt.Errorf("choose what to rot in %s's raft log: %w", c.Names()[i], err)
	}
	s := spans[rng.IntN(max(1, len(spans)/2))]
	off := s.off + rng.Int64N(s.len)
	return rel, off, min(rotLen, s.off+s.len-off), nil
}

// span is a byte range of a file.
type span struct{ off, len int64 }

// oldest is the first file matching pattern under dir, by name (segment
// and raft-wal file names begin with their zero-padded sequence number).
func oldest(dir, pattern string) (string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(paths) == 0 {
		return "", fmt.Errorf("no file %s: %v", pattern, err)
	}
	rel, err := filepath.Rel(dir, slices.Min(paths))
	return rel, err
}

// segmentRecords lists the records of a segment file: each an 8-byte
// header (crc, then the size of what follows, little-endian) and its
// body, from offset 0 up to a header of zeros (internal/raftlog).
func segmentRecords(path string) ([]span, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var spans []span
	var hdr [8]byte
	for off := int64(0); ; {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return spans, atEOF(err) // no record runs past the end of the file
		}
		n := int64(binary.LittleEndian.Uint32(hdr[4:]))
		if n == 0 {
			return spans, nil
		}
		if _, err := r.Discard(int(n)); err != nil {
			return spans, atEOF(err)
		}
		spans = append(spans, span{off, 8 + n})
		off += 8 + n
	}
}

// usedPages lists the 4 KiB pages of a file that hold anything but zeros,
// past the first skip.
func usedPages(path string, skip int64) ([]span, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	page := make([]byte, 4096)
	var spans []span
	for p := int64(0); ; p++ {
		n, err := io.ReadFull(r, page)
		if n > 0 && p >= skip && slices.ContainsFunc(page[:n], func(b byte) bool { return b != 0 }) {
			spans = append(spans, span{p * 4096, int64(n)})
		}
		if err != nil {
			return spans, atEOF(err)
		}
	}
}

// atEOF is nil for the end of a file, else err.
func atEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}
