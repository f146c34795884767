// Package cluster runs one raftcat node's replication: a hashicorp/raft
// instance (log and stable store in raft-boltdb, snapshots in raft's file
// store, TCP transport) around the pure fsm.Machine, and memberlist gossip
// through which nodes find each other, bootstrap once the expected number
// is seen, and learn each other's HTTP addresses. Raft's port is the
// cluster port: it also carries peer HTTP between nodes, and with
// Config.TLS every connection on it is mutual TLS with the cluster CA.
//
// It is the only package that imports raft, raft-boltdb and memberlist.
// Callers propose fsm commands, read linearizably, and ask who leads.
package cluster
