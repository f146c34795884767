// Package fsm is raftcat's replicated state machine: the catalog state
// (catalogs, schemas, tables with their commit logs, staging tables), the
// commands that change it, and the appliers that turn (state, command, raft
// index) into a new state and a typed result.
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
package fsm
