// Package deltalog reads Delta Lake transaction logs from object storage:
// the protocol, metadata and active data files of a table at any version
// (a snapshot), single commits with their actions, and commit timestamps
// for time travel. It is the log reader behind raftcat's Delta Sharing
// server; it never reads data files.
//
// # Reading a table
//
// [Open] lists <table>/_delta_log/ once and learns the published commits
// (%020d.json) and the complete checkpoints: classic single-file,
// multi-part (a set with a missing part is ignored) and v2 checkpoints
// (UUID-named JSON or Parquet files that may point to sidecar files in
// _delta_log/_sidecars/). _last_checkpoint is only a hint and is not read;
// .crc files, hidden files, *.compacted.json and everything in
// subdirectories (.tmp/, _autostats/, _commits/, _staged_commits/) are
// ignored.
//
// [Log.Snapshot] builds the state at a version from the newest checkpoint
// at or below it, then replays the JSON commits after it: the last
// protocol and metaData win, an add inserts or replaces a file by its
// reconciliation key (path plus deletion-vector id, [AddFile.Key]) and a
// remove deletes one. Remove rows of a checkpoint are tombstones and are
// not read.
//
// # Catalog-managed tables
//
// For a table whose commits a catalog ratifies, [Source.Ratified] lists
// the catalog's commits. Versions newer than the newest published commit
// are read from their staged files (_delta_log/_staged_commits/), and
// published commits or checkpoints newer than the newest ratified version
// are ignored: the catalog is the source of truth.
//
// # Timestamps
//
// A version's commit timestamp is its in-commit timestamp
// (commitInfo.inCommitTimestamp, read from the first line of the commit)
// when in-commit timestamps are enabled for it, otherwise the commit
// file's modification time made monotonic (ts[v] = max(ts[v], ts[v-1]+1));
// an unpublished ratified commit without one uses the catalog's timestamp.
// Which versions have them enabled comes from the latest metadata:
// delta.enableInCommitTimestamps, from
// delta.inCommitTimestampEnablementVersion on (from version 0 when that is
// not set), as Delta's own history manager decides. In-commit timestamps
// need not be monotonic; [Log.VersionAt] and [Log.VersionAtOrAfter] scan
// them rather than bisect.
//
// # Caching
//
// A [Cache], shared by all Logs, keeps snapshots and in-commit timestamps
// keyed by table location and version in an LRU bounded by an estimate of
// their size. Concurrent requests for the same missing entry do the work
// once. A snapshot is built incrementally from the newest cached snapshot
// below it when that one is not older than the checkpoint the build would
// otherwise start from (or is at most 32 commits behind): the build then
// reads only the commits in between and merges them into the sorted file
// list. Each entry also records which log file it was built from
// (location, size, modification time), so a table re-created at the same
// location never serves stale entries.
//
// Snapshots returned by a Log share their files with the cache and must
// be treated as read-only; their files have DataChange false, as in
// Delta's own log replay (checkpoints do not keep it). [Log.Commit]
// decodes afresh on every call and keeps each action as written.
package deltalog
