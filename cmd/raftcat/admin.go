package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/snapshot"
)

// adminFlags parses the flags every admin command shares (--addr, and
// the client's: --token and the TLS flags) and returns the positional
// arguments. ok is false when the command ends here, with code its exit
// status (0 after --help).
func adminFlags(name, usage string, args []string, stdout, stderr io.Writer, nargs int) (addr string, pos []string, code int, ok bool) {
	return adminFlagsWith(name, usage, args, stdout, stderr, nargs, nil)
}

// adminFlagsWith is adminFlags with flags of the command's own (extra may
// be nil); nargs -1 takes zero or one positional argument. It sets
// adminClient up to reach the node as the flags say.
func adminFlagsWith(name, usage string, args []string, stdout, stderr io.Writer, nargs int, extra func(*flag.FlagSet)) (string, []string, int, bool) {
	fs := flag.NewFlagSet("raftcat "+name, flag.ContinueOnError)
	def := "http://127.0.0.1:8080"
	if v := os.Getenv("RAFTCAT_ADDR"); v != "" {
		def = v
	}
	addr := fs.String("addr", def, "any node of the cluster: a base URL, https:// for a node serving TLS, or a bare host:port "+
		"(https when --ca-file or --cert-file is given, else http) [RAFTCAT_ADDR]")
	var opts clientOptions
	opts.bindFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if code, ok := parseFlags(fs, args, stdout, stderr, usageText("Usage: raftcat "+usage+"\n\nFlags:\n")); !ok {
		return "", nil, code, false
	}
	what := strings.TrimPrefix(usage[strings.LastIndex(usage, "]")+1:], " ")
	if code, ok := wantArgs(fs, nargs, what, stderr); !ok {
		return "", nil, code, false
	}
	base, err := nodeURL(*addr, opts.caFile != "" || opts.certFile != "")
	if err != nil {
		return "", nil, badUsage(fs, stderr, "--addr: %v", err), false
	}
	client, err := newClient(opts, adminTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "raftcat %s: %v\n", name, err)
		return "", nil, 2, false
	}
	adminClient = client
	return base, fs.Args(), 0, true
}

// nodeURL is the base URL --addr names: a URL as given, or a bare
// host:port with the scheme the client's TLS flags imply.
func nodeURL(addr string, tls bool) (string, error) {
	addr = strings.TrimRight(addr, "/")
	if !strings.Contains(addr, "://") {
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			return "", fmt.Errorf("%q is neither a URL (http://HOST:PORT) nor HOST:PORT", addr)
		}
		scheme := "http://"
		if tls {
			scheme = "https://"
		}
		addr = scheme + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL of a node", addr)
	}
	return addr, nil
}

// adminTimeout bounds an admin command's request; backups take long.
const adminTimeout = 10 * time.Minute

// adminClient is the client the admin commands reach the node with, as
// adminFlagsWith set it up.
var adminClient *http.Client

// apiError extracts a readable message from an error answer.
func apiError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil {
		if s, ok := e.Error.(string); ok && s != "" {
			msg = s
		} else if e.Message != "" {
			msg = e.Message
		}
	}
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
}

const snapshotUsage = `Usage:
  raftcat snapshot save [--addr URL] FILE      save a consistent backup of the whole catalog
  raftcat snapshot inspect FILE                verify a backup and print what it holds
  raftcat snapshot restore [--addr URL] FILE   replace the cluster's state with a backup

Run each with --help for its flags.
`

const snapshotInspectHelp = `Usage: raftcat snapshot inspect FILE

Verifies a backup made by 'raftcat snapshot save' (its checksum and that
it decodes) and prints what it holds. It reads the file only.
`

func snapshotCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelpFlag(args[0]) {
		w, code := stdout, 0
		if len(args) == 0 {
			w, code = stderr, 2
		}
		fmt.Fprint(w, snapshotUsage)
		return code
	}
	var err error
	switch args[0] {
	case "save":
		addr, pos, code, ok := adminFlags("snapshot save", "snapshot save [--addr URL] FILE", args[1:], stdout, stderr, 1)
		if !ok {
			return code
		}
		err = snapshotSave(addr, pos[0], stdout)
	case "inspect":
		fs := flag.NewFlagSet("raftcat snapshot inspect", flag.ContinueOnError)
		if code, ok := parseFlags(fs, args[1:], stdout, stderr, usageText(snapshotInspectHelp)); !ok {
			return code
		}
		if code, ok := wantArgs(fs, 1, "FILE", stderr); !ok {
			return code
		}
		err = snapshotInspect(fs.Arg(0), stdout)
	case "restore":
		addr, pos, code, ok := adminFlags("snapshot restore", "snapshot restore [--addr URL] FILE", args[1:], stdout, stderr, 1)
		if !ok {
			return code
		}
		err = snapshotRestore(addr, pos[0], stdout)
	default:
		return unknownCommand(stderr, "raftcat snapshot", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "raftcat snapshot "+args[0]+":", err)
		return 1
	}
	return 0
}

// snapshotSave downloads a consistent snapshot, verifies it, and only then
// moves it into place.
func snapshotSave(addr, file string, stdout io.Writer) error {
	resp, err := adminClient.Get(addr + "/v1/cluster/snapshot")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiError(resp)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".raftcat-snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	info, err := inspectFile(tmp.Name())
	if err != nil {
		return fmt.Errorf("downloaded snapshot does not verify: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "saved %s: %d bytes, raft index %d, term %d, %d tables\n", file, n, info.hdr.Index, info.hdr.Term, info.tables)
	return nil
}

type snapshotInfo struct {
	hdr                                snapshot.Header
	size                               int64
	catalogs, schemas, tables, commits int
}

// inspectFile reads a whole snapshot file, verifying its checksum and
// every record.
func inspectFile(file string) (snapshotInfo, error) {
	f, err := os.Open(file)
	if err != nil {
		return snapshotInfo{}, err
	}
	defer f.Close()
	st, hdr, err := snapshot.ReadState(f)
	if err != nil {
		return snapshotInfo{}, err
	}
	fi, _ := f.Stat()
	info := snapshotInfo{hdr: hdr, size: fi.Size()}
	info.catalogs, info.schemas, info.tables, info.commits = st.Counts()
	return info, nil
}

func snapshotInspect(file string, stdout io.Writer) error {
	info, err := inspectFile(file)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s\n", file)
	fmt.Fprintf(w, "size\t%d bytes\n", info.size)
	fmt.Fprintf(w, "format version\t%d\n", info.hdr.Version)
	fmt.Fprintf(w, "raft index\t%d\n", info.hdr.Index)
	fmt.Fprintf(w, "raft term\t%d\n", info.hdr.Term)
	if info.hdr.CreatedUnixMs > 0 {
		fmt.Fprintf(w, "created\t%s\n", time.UnixMilli(info.hdr.CreatedUnixMs).UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "catalogs\t%d\n", info.catalogs)
	fmt.Fprintf(w, "schemas\t%d\n", info.schemas)
	fmt.Fprintf(w, "tables\t%d\n", info.tables)
	fmt.Fprintf(w, "tracked commits\t%d\n", info.commits)
	fmt.Fprintf(w, "checksum\tok\n")
	return w.Flush()
}

// snapshotRestore verifies the file locally, then uploads it; the cluster
// verifies it again before anything changes.
func snapshotRestore(addr, file string, stdout io.Writer) error {
	info, err := inspectFile(file)
	if err != nil {
		return fmt.Errorf("refusing to restore %s: %w", file, err)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	req, err := http.NewRequest(http.MethodPost, addr+"/v1/cluster/restore", f)
	if err != nil {
		return err
	}
	req.ContentLength = info.size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := adminClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiError(resp)
	}
	fmt.Fprintf(stdout, "restored %s (raft index %d, %d tables) into the cluster at %s\n", file, info.hdr.Index, info.tables, addr)
	return nil
}

func membersCmd(args []string, stdout, stderr io.Writer) int {
	addr, _, code, ok := adminFlags("members", "members [--addr URL]", args, stdout, stderr, 0)
	if !ok {
		return code
	}
	resp, err := adminClient.Get(addr + "/v1/cluster")
	if err != nil {
		fmt.Fprintln(stderr, "raftcat members:", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(stderr, "raftcat members:", apiError(resp))
		return 1
	}
	var st cluster.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		fmt.Fprintln(stderr, "raftcat members:", err)
		return 1
	}
	printMembers(stdout, st)
	return 0
}

func printMembers(stdout io.Writer, st cluster.Status) {
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tRAFT ADDR\tHTTP ADDR\tRAFT ROLE\tGOSSIP")
	inRaft := map[string]bool{}
	for _, m := range st.Members {
		inRaft[m.ID] = true
		role := "nonvoter"
		if m.Voter {
			role = "voter"
		}
		if m.Leader {
			role = "leader"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.RaftAddr, m.HTTPAddr, role, m.Status)
	}
	for _, g := range st.Gossip {
		if !inRaft[g.ID] {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", g.ID, g.RaftAddr, g.HTTPAddr, "not in raft", g.Status)
		}
	}
	w.Flush()
	fmt.Fprintf(stdout, "\nasked %s: state %s, leader %s, term %d, commit index %d\n", st.NodeID, st.State, st.LeaderID, st.Term, st.CommitIndex)
}

// postCmd runs an admin command that POSTs {"id": ...} to the cluster.
func postCmd(name, path string, args []string, stdout, stderr io.Writer, nargs int) int {
	usage := name + " [--addr URL]"
	if nargs == 1 {
		usage += " ID"
	}
	addr, pos, code, ok := adminFlags(name, usage, args, stdout, stderr, nargs)
	if !ok {
		return code
	}
	body := map[string]string{}
	if nargs == 1 {
		body["id"] = pos[0]
	}
	raw, _ := json.Marshal(body)
	resp, err := adminClient.Post(addr+path, "application/json", bytes.NewReader(raw))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = apiError(resp)
	}
	if err != nil {
		fmt.Fprintf(stderr, "raftcat %s: %v\n", name, err)
		return 1
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Fprintln(stdout, strings.TrimSpace(string(out)))
	return 0
}
