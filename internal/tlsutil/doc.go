// Package tlsutil is raftcat's transport security: certificates read from
// files and read again when the files change (so a certificate rotated on
// disk is served on the next handshake, without a restart), the TLS
// configurations of the client port and of the cluster port (mutual TLS
// with the cluster CA), and the making of a CA and of certificates it
// signs (raftcat tls ca create, raftcat tls cert create).
package tlsutil
