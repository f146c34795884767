// Package faultfs is a FUSE filesystem for tests and drills that mounts over
// a directory and simulates what a process kill never shows: a power cut
// that loses what no sync made durable, and a disk that fails.
//
// Every operation goes through to the backing directory at once, so
// processes read back what they wrote; faultfs keeps on the side what it
// needs to undo the changes no sync covered, and PowerCut undoes them.
//
// # Durability model
//
//   - A file's data is durable once an fsync or fdatasync of that file
//     succeeds after the write, through any handle of the same inode. A
//     file opened O_SYNC or O_DSYNC is covered too, because the kernel
//     sends an fsync after each such write. Data is tracked in 4 KiB
//     pages; a file's durable size is its size at its last good sync.
//   - A directory's entries (create, mkdir, mknod, symlink, link, unlink,
//     rmdir, rename into or out of it) are durable once that directory is
//     fsynced. A rename is one change to both of its directories: syncing
//     either one (the destination, say) makes it durable, as a journal
//     commit would.
//   - What is in the backing directory at Mount is durable.
//   - Unmount is a clean shutdown: everything written stays.
//
// PowerCut (only after every process using the mount is dead) puts back
// each unsynced page's durable content and each file's durable size, then
// undoes the unsynced entry changes newest first: a created name vanishes
// (a directory with all in it), an unlinked file comes back with its
// durable data, a rename goes back and the file it replaced returns. With
// torn set, each unsynced page within the file's current size is kept or
// dropped by a coin seeded with Options.Seed, the cut's number and the
// file's path at its first unsynced change, so one seed and one sequence
// of operations give one outcome; a page kept past the durable size keeps
// the file that long, and dropped pages before it read as zeros. The cut
// then mounts afresh, so no kernel cache (page cache, mmap, dentries)
// outlives it.
//
// Like Linux after a writeback error, a failed fsync (FsyncEIO) does not
// make the pages it covered durable, and a later fsync that succeeds does
// not either: they are lost at the next cut although reads return them
// until then. A page written again after the failure is dirty again, as a
// page in the kernel's cache would be, and a good sync then covers it.
// The size a later good sync records stays durable, so the lost pages past
// the old size come back as zeros, as on a filesystem that journals
// metadata but not data.
//
// # Faults
//
// Inject sets faults matched against the path relative to the mount (a
// path.Match pattern; "" is every file): FsyncEIO (file and directory
// syncs fail with EIO), WriteEIO (writes fail and change nothing), ReadEIO
// (reads and mmap page-ins fail), NoSpace (writes and fallocate that would
// grow the sum of the file sizes in the backing directory past Limit fail
// with ENOSPC, whole; Statfs reports Limit), Slow (Latency added to every
// write and sync) and BitRot (reads of [Off, Off+Len) return every byte
// XOR 0x01; the backing file is untouched). ReadEIO and BitRot drop the
// kernel's cached pages of the files they name when set, and Clear drops
// the pages BitRot flipped, so the next read sees the change.
//
// # Limits
//
//   - Syncs are not passed to the backing disk: durability here is
//     simulated, and a crash of the host loses what its page cache held.
//   - Metadata other than size and names (mode, owner, times, xattrs) is
//     not reverted. A removed or replaced directory (necessarily empty)
//     comes back as a new empty directory with its old mode and owner.
//   - An unlinked or replaced file waits in a stash directory next to the
//     backing directory until its removal is durable, so its link count
//     is one higher than it would be.
//   - Saving the durable content of the pages a truncate cuts off costs
//     memory in proportion to what it cuts.
//   - While a NoSpace fault is set, each write that grows a file walks the
//     backing directory to add up the sizes; growing writes serialise.
//   - Content changed by an ioctl (FICLONE, say) is not tracked;
//     copy_file_range falls back to reads and writes, which are.
//   - PowerCut unmounts; if something still holds the mount it detaches
//     it lazily, and whoever still uses the old mount bypasses the cut.
//   - The process serving a mount must not read it through mmap: a Go
//     stop-the-world waits for the thread blocked in the page fault, which
//     waits for the stopped server. Map files from other processes.
package faultfs
