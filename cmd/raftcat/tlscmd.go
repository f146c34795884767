package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftcat/raftcat/internal/tlsutil"
)

const tlsUsage = `Usage:
  raftcat tls ca create --out DIR [--name NAME] [--lifetime D]
      make a CA: DIR/ca.pem and DIR/ca-key.pem
  raftcat tls cert create --ca DIR --name NAME --host HOST[,IP...] --out DIR [--client] [--lifetime D]
      make a node certificate (or, with --client, a client certificate) the CA signs

A cluster's nodes serve HTTPS with node certificates of one CA, which its
clients trust with --ca-file. Run each with --help for what the files are
for and which flags take them.
`

const caCreateHelp = `Usage: raftcat tls ca create --out DIR [--name NAME] [--lifetime D]

Makes a new certificate authority (an ECDSA P-256 key) and writes to DIR:
  ca.pem      the CA certificate, which is not secret. Nodes take it as
              --cluster-tls-ca-file (the CA every peer's certificate must
              come from) and as --tls-client-ca-file (to require client
              certificates); clients take it as --ca-file (RAFTCAT_CA_FILE)
              to trust the nodes' certificates.
  ca-key.pem  the CA's private key (mode 0600). It signs certificates
              ('raftcat tls cert create --ca DIR'); no node needs it, so keep
              it where certificates are made.
It refuses to write over an existing CA.

Flags:
`

const certCreateHelp = `Usage: raftcat tls cert create --ca DIR --name NAME --host HOST[,IP...] --out DIR [--client] [--lifetime D]

Makes a certificate (an ECDSA P-256 key) the CA in --ca signs, and writes to
--out DIR:
  NAME.pem      the certificate
  NAME-key.pem  its private key (mode 0600)

A node certificate (the default) is for server and client authentication.
A node takes it, with its key, both as --tls-cert-file and --tls-key-file
(HTTPS on the client port) and as --cluster-tls-cert-file and
--cluster-tls-key-file (mutual TLS with its peers). --host lists every DNS
name and IP address clients and peers reach the node at.

With --client, a client certificate (client authentication only): the
commands' --cert-file and --key-file, for nodes run with
--tls-client-ca-file. It opens no connection between nodes.

To rotate a node's certificate, make a new one and write it over the files
the node was started with: the node serves it from the next handshake on.
It refuses to write over existing files.

Flags:
`

func tlsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 1 && isHelpFlag(args[0]) {
		fmt.Fprint(stdout, tlsUsage)
		return 0
	}
	sub := strings.Join(args[:min(2, len(args))], " ")
	switch sub {
	case "ca create":
		return caCreate(args[2:], stdout, stderr)
	case "cert create":
		return certCreate(args[2:], stdout, stderr)
	}
	if helpAsked(args) {
		fmt.Fprint(stdout, tlsUsage)
		return 0
	}
	return unknownCommand(stderr, "raftcat tls", sub)
}

func caCreate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftcat tls ca create", flag.ContinueOnError)
	out := fs.String("out", "", "directory to write ca.pem and ca-key.pem to (required)")
	name := fs.String("name", "raftcat-ca", "the CA's name (its certificate's common name)")
	lifetime := fs.Duration("lifetime", tlsutil.DefaultCALifetime, "how long the CA is valid; the certificates it signs end by then")
	if code, ok := parseTLSFlags(fs, caCreateHelp, args, stdout, stderr); !ok {
		return code
	}
	if *out == "" {
		return badUsage(fs, stderr, "--out DIR is required")
	}
	if _, err := tlsutil.CreateCA(*out, *name, *lifetime); err != nil {
		fmt.Fprintln(stderr, "raftcat tls ca create:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s (the CA certificate)\nwrote %s (the CA's private key: keep it secret)\n",
		filepath.Join(*out, tlsutil.CACertFile), filepath.Join(*out, tlsutil.CAKeyFile))
	return 0
}

func certCreate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftcat tls cert create", flag.ContinueOnError)
	caDir := fs.String("ca", "", "directory of the CA ('raftcat tls ca create --out') (required)")
	name := fs.String("name", "", "the certificate's name: its common name and the files' names (required)")
	hosts := fs.String("host", "", "comma-separated DNS names and IP addresses the node is reached at (required for a node certificate)")
	out := fs.String("out", "", "directory to write NAME.pem and NAME-key.pem to (required)")
	client := fs.Bool("client", false, "a client certificate, for the commands' --cert-file, instead of a node certificate")
	lifetime := fs.Duration("lifetime", tlsutil.DefaultCertLifetime, "how long the certificate is valid (at most until the CA's end)")
	if code, ok := parseTLSFlags(fs, certCreateHelp, args, stdout, stderr); !ok {
		return code
	}
	if *caDir == "" || *name == "" || *out == "" {
		return badUsage(fs, stderr, "--ca, --name and --out are required")
	}
	if err := certCreateIn(*caDir, *name, *hosts, *out, *client, *lifetime, stdout); err != nil {
		fmt.Fprintln(stderr, "raftcat tls cert create:", err)
		return 1
	}
	return 0
}

func certCreateIn(caDir, name, hosts, out string, client bool, lifetime time.Duration, stdout io.Writer) error {
	ca, err := tlsutil.LoadCA(caDir)
	if err != nil {
		return err
	}
	kind, what := tlsutil.NodeCert, "node certificate"
	if client {
		kind, what = tlsutil.ClientCert, "client certificate"
	}
	certFile, keyFile, err := ca.CreateCert(out, name, splitHosts(hosts), kind, lifetime)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (the %s)\nwrote %s (its private key)\n", certFile, what, keyFile)
	return nil
}

func splitHosts(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// parseTLSFlags parses a tls command's flags; ok is false when the
// command ends there, with code its exit status (0 after --help).
func parseTLSFlags(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if code, ok := parseFlags(fs, args, stdout, stderr, usageText(help)); !ok {
		return code, false
	}
	return wantArgs(fs, 0, "", stderr)
}
