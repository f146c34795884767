// Package fsm is raftcat's replicated state machine: the catalog state
// (a namespace tree of catalogs, schemas and nested namespaces, tables with
// their per-format state, staging tables), the commands that change it, and
// the appliers that turn (state, command, raft index) into a new state and
// a typed result.
//
// The package is pure. It reads no clock, draws no random numbers, does no
// I/O and never lets map iteration order reach its output: everything that
// is not deterministic (wall-clock time, new UUIDs, storage verdicts) is
// decided before a command is proposed and travels inside it. Every replica
// that applies the same log therefore holds byte-identical state and
// computes the same etags.
//
// State is persistent (immutable radix trees): an applier works on a
// transaction and either commits all of it or discards it, so a rejected
// command never leaves half its effects behind, and a reader or a snapshot
// holds a consistent view without blocking the apply loop.
//
// # Files
//
// The machinery is kind-agnostic: command.go (encoding), registry.go
// (command and record registries), machine.go and check.go (applying),
// state.go (trees and transactions), records.go (snapshot records),
// namespace.go (the namespace tree and its key scheme), rules.go (the
// validation levels commands carry) and casefold.go (names that differ only
// in case from a sibling's, refused from RulesCaseNames on). Each object kind
// has one file holding its struct, commands, appliers, tree, record kind
// and their registration: metastore.go, catalog.go, schema.go,
// namespace.go, table.go, staging.go. Delta's table state and rules are in
// table_delta.go and delta_*.go; Iceberg's metadata pointer is in
// table_iceberg.go and its commands in iceberg_*.go (create, the atomic
// multi-table commit, drop and rename by namespace path; views, which are
// tables of type VIEW, in iceberg_view.go). Property
// updates of a namespace at any level are namespace_properties.go's.
// Lance tables keep their version records in a tree of their own keyed by
// table uuid (table_lance.go; commands in lance.go). transaction.go holds
// Transaction, several table commands of any format in one entry, all or
// nothing.
// Delta Sharing's objects live outside namespaces: shares (share.go),
// recipients and their tokens, held as hashes (recipient.go), and the key
// that signs the file URLs raftcat serves itself (sharing_key.go).
// The keyring the nodes encrypt their gossip with is gossip_key.go's.
//
// # Adding an object kind
//
// One new file declares the struct; its command types and record kind
// with explicit, never reused values; its tree (newTree); and an init
// function that calls registerCommand for each command, registerRecord
// for its record kind and, for a kind that lives in namespaces,
// registerChildren so that deleting and renaming namespaces carries it
// along. Registering a number twice stops the program at start-up. A
// command that returns the new entity typed adds a field to Result.
//
// # Compatibility
//
// Command types, payload versions, record kinds and record layouts are
// append-only: a log entry or snapshot once written applies and restores
// the same forever. testdata/upgrade holds a log and a backup written by
// an older release that the tests hold this one to.
package fsm
