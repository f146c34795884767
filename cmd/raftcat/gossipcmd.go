package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
)

const gossipUsage = `Usage:
  raftcat gossip keygen                                                 print a new gossip key (the base64 of 32 random bytes)
  raftcat gossip keys list [--addr URL] [--token T]                     the cluster's gossip keys by fingerprint, and how many nodes hold and use each
  raftcat gossip keys install|use|remove [--addr URL] [--token T] KEY   change the cluster's gossip keyring; KEY - reads the key from stdin

Rotating the key of a cluster whose nodes run with --gossip-key-file (each step waits for 'keys list'):
  1. raftcat gossip keygen > new.key; raftcat gossip keys install - < new.key   (every node then also decrypts with it)
  2. once every node has it installed: raftcat gossip keys use - < new.key      (every node encrypts with it)
  3. once it is every node's primary: raftcat gossip keys remove - < old.key    (then put new.key in every --gossip-key-file)
`

// gossipKeysPath is the admin endpoint of the gossip keyring.
const gossipKeysPath = "/v1/cluster/gossip-keys"

func gossipCmd(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) >= 1 && isHelpFlag(args[0]):
		fmt.Fprint(stdout, gossipUsage)
		return 0
	case len(args) >= 1 && args[0] == "keygen":
		return gossipKeygen(args[1:], stdout, stderr)
	case len(args) >= 2 && args[0] == "keys" && args[1] == "list":
		return gossipKeysList(args[2:], stdout, stderr)
	case len(args) >= 2 && args[0] == "keys" && slices.Contains([]string{fsm.GossipKeyInstall, fsm.GossipKeyUse, fsm.GossipKeyRemove}, args[1]):
		return gossipKeyChange(args[1], args[2:], stdout, stderr)
	}
	if helpAsked(args) {
		fmt.Fprint(stdout, gossipUsage)
		return 0
	}
	return unknownCommand(stderr, "raftcat gossip", strings.Join(args, " "))
}

// gossipKeygen prints a new 32-byte key (AES-256), as a key file holds it.
func gossipKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftcat gossip keygen", flag.ContinueOnError)
	if code, ok := parseFlags(fs, args, stdout, stderr, usageText("Usage: raftcat gossip keygen\n\n"+
		"Prints a new gossip key: the base64 of 32 random bytes (AES-256), as a --gossip-key-file holds it.\n")); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 0, "", stderr); !ok {
		return code
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		fmt.Fprintln(stderr, "raftcat gossip keygen:", err)
		return 1
	}
	fmt.Fprintln(stdout, base64.StdEncoding.EncodeToString(key))
	return 0
}

func gossipKeysList(args []string, stdout, stderr io.Writer) int {
	addr, _, code, ok := adminFlags("gossip keys list", "gossip keys list [--addr URL] [--token T]", args, stdout, stderr, 0)
	if !ok {
		return code
	}
	keys, err := gossipKeysCall(addr, http.MethodGet, nil)
	if err != nil {
		fmt.Fprintln(stderr, "raftcat gossip keys list:", err)
		return 1
	}
	printGossipKeys(stdout, keys)
	return 0
}

// gossipKeyChange installs, uses or removes a key and prints the listing.
func gossipKeyChange(op string, args []string, stdout, stderr io.Writer) int {
	name := "gossip keys " + op
	addr, pos, code, ok := adminFlags(name, name+" [--addr URL] [--token T] KEY (- reads it from stdin)", args, stdout, stderr, 1)
	if !ok {
		return code
	}
	keys, err := changeGossipKey(addr, op, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "raftcat %s: %v\n", name, err)
		return 1
	}
	printGossipKeys(stdout, keys)
	return 0
}

// changeGossipKey posts one change of the keyring.
func changeGossipKey(addr, op, arg string) (clusterapi.GossipKeys, error) {
	key, err := keyArg(arg)
	if err != nil {
		return clusterapi.GossipKeys{}, err
	}
	body, _ := json.Marshal(map[string]string{"op": op, "key": key})
	return gossipKeysCall(addr, http.MethodPost, body)
}

// keyArg is the key an argument gives: itself, or stdin's first line for
// "-", so that the key need not appear in the process list.
func keyArg(arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, 4096))
	if err != nil {
		return "", fmt.Errorf("read the key from stdin: %w", err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(line), nil
}

// gossipKeysCall sends a request to the gossip keys endpoint and decodes
// the listing it answers.
func gossipKeysCall(addr, method string, body []byte) (clusterapi.GossipKeys, error) {
	var keys clusterapi.GossipKeys
	req, err := http.NewRequest(method, addr+gossipKeysPath, bytes.NewReader(body))
	if err != nil {
		return keys, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := adminClient.Do(req)
	if err != nil {
		return keys, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return keys, apiError(resp)
	}
	return keys, json.NewDecoder(resp.Body).Decode(&keys)
}

// printGossipKeys prints the listing: per key, the alive nodes that have
// it installed and that encrypt with it, and its place in the replicated
// keyring.
func printGossipKeys(stdout io.Writer, keys clusterapi.GossipKeys) {
	if !keys.Encrypted {
		fmt.Fprintln(stdout, "gossip encryption is off (the nodes run without --gossip-key-file)")
		return
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FINGERPRINT\tINSTALLED\tPRIMARY\tREPLICATED KEYRING")
	for _, k := range keys.Keys {
		fmt.Fprintf(w, "%s\t%d/%d\t%d/%d\t%s\n", k.Fingerprint, k.Installed, k.Alive, k.Primary, k.Alive, keyringPlace(k))
	}
	w.Flush()
}

// keyringPlace says what a key is in the replicated keyring.
func keyringPlace(k clusterapi.GossipKey) string {
	switch {
	case k.ReplicatedPrimary:
		return "primary"
	case k.Replicated:
		return "installed"
	}
	return "-"
}
