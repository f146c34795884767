package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/bench"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestBenchSmoke runs `raftcat bench` for a few seconds against the
// three-node cluster it starts (and against etcd when etcd is installed,
// as CI does): it must commit, verify every table afterwards, and write
// the JSON result. The numbers themselves are not judged here.
func TestBenchSmoke(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	args := []string{"bench", "--duration", "2s", "--warmup", "1s", "--rounds", "2", "--clients", "4", "--tables", "2", "--out", out}
	_, etcdErr := exec.LookPath("etcd")
	if etcdErr == nil {
		args = append(args, "--against-etcd")
	}
	output, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	results := []*bench.Result{rep.Raftcat}
	if rep.Rounds != 2 || rep.DurationS != 2 {
		t.Errorf("report says %d rounds of %v s, want 2 of 2 s", rep.Rounds, rep.DurationS)
	}
	if etcdErr == nil {
		results = append(results, rep.Etcd)
		if rep.ThroughputRatio <= 0 {
			t.Errorf("no throughput ratio in %s", raw)
		}
		if len(rep.RoundRatios) != 2 || rep.RoundRatios[0] <= 0 || rep.RoundRatios[1] <= 0 {
			t.Errorf("want a throughput ratio for each of 2 rounds, got %v", rep.RoundRatios)
		}
	}
	for _, r := range results {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
		// Every client commits: a starved one (a request stuck on its way
		// to the leader, say) shows as a client with none.
		if r.ClientCommitsMin <= 0 || r.ClientCommitsMax < r.ClientCommitsMin || r.ClientCommitsMax > r.Commits {
			t.Errorf("%s: commits per client %d-%d of %d in all", r.System, r.ClientCommitsMin, r.ClientCommitsMax, r.Commits)
		}
	}
	if !strings.Contains(string(output), "commits/s") {
		t.Errorf("no human summary printed:\n%s", output)
	}
	checkBreakdown(t, rep, rep.Raftcat.Commits)
}

// checkBreakdown wants the stages every commit passes through timed at
// least as often as the measured commits (raft's own stages may time
// several commits at once).
func checkBreakdown(t *testing.T, rep bench.Report, commits int) {
	t.Helper()
	stages := map[string]bench.Stage{}
	for _, s := range rep.Breakdown {
		stages[s.Name] = s
	}
	for _, name := range []string{"HTTP commit at the node the client reached", "HTTP load at the node the client reached",
		"propose (leader)", "group-commit wait (leader)"} {
		if stages[name].Count < float64(commits) {
			t.Errorf("stage %q timed %v times for %d commits", name, stages[name].Count, commits)
		}
	}
}

// TestBenchAgainstAuthOffSmoke runs `raftcat bench --against-auth-off`
// for a few seconds: a cluster with authentication on (its admin token
// in a file of its own, every request carrying it) and one without, in
// alternating rounds, must both commit, verify every table afterwards
// and be compared, with the breakdown of both.
func TestBenchAgainstAuthOffSmoke(t *testing.T) {
	rep, raw, output, dir := benchComparison(t, "--against-auth-off")
	if rep.Auth != "token" || rep.AuthOff == nil || rep.AuthOff.System != "auth-off" || rep.Etcd != nil {
		t.Fatalf("report %s", raw)
	}
	for _, r := range []*bench.Result{rep.Raftcat, rep.AuthOff} {
		if r.Commits == 0 || r.Errors != 0 || !r.Verified || r.ClientCommitsMin <= 0 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if rep.AuthThroughputRatio <= 0 || rep.AuthP99Ratio <= 0 || len(rep.AuthRoundRatios) != 2 {
		t.Fatalf("ratios %v, %v by round %v", rep.AuthThroughputRatio, rep.AuthP99Ratio, rep.AuthRoundRatios)
	}
	if !strings.Contains(string(output), "auth on/auth off: throughput x") {
		t.Errorf("no comparison printed:\n%s", output)
	}
	checkBreakdown(t, rep, rep.Raftcat.Commits)
	checkBreakdown(t, bench.Report{Breakdown: rep.AuthOffBreakdown}, rep.AuthOff.Commits)
	// Only the cluster with authentication has an admin token, and only
	// its owner may read it.
	if fi, err := os.Stat(filepath.Join(dir, "raftcat", "admin.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin token of the cluster with authentication: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "auth-off", "admin.token")); !os.IsNotExist(err) {
		t.Errorf("the cluster without authentication has an admin token file: %v", err)
	}
	if log, err := os.ReadFile(filepath.Join(dir, "raftcat", "node1.log")); err != nil || !strings.Contains(string(log), "authentication on") {
		t.Errorf("the cluster compared did not run with authentication on: %v", err)
	}
}

// benchComparison runs a short bench of two started clusters compared
// by flag (--against-auth-off, --secure) in alternating rounds, in a
// directory it returns, and its report.
func benchComparison(t *testing.T, flag string) (rep bench.Report, raw []byte, output []byte, dir string) {
	t.Helper()
	dir = t.TempDir()
	out := filepath.Join(dir, "bench.json")
	cmd := exec.Command(raftcatBinary(t), "bench", flag, "--duration", "1s", "--warmup", "0s", "--rounds", "2",
		"--clients", "4", "--tables", "2", "--dir", dir, "--out", out)
	cmd.Env = append(os.Environ(), "RAFTCAT_TOKEN=") // the bench makes the admin token
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench %s: %v\n%s", flag, err, output)
	}
	if raw, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	return rep, raw, output, dir
}

// TestBenchIcebergSmoke runs `raftcat bench --protocol iceberg` for a few
// seconds: the Iceberg REST and the Delta commit paths of one started
// cluster, in alternating rounds, must both commit, verify every table
// afterwards and be compared.
func TestBenchIcebergSmoke(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--protocol", "iceberg", "--duration", "2s", "--warmup", "1s", "--rounds", "2",
		"--clients", "4", "--tables", "2", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench --protocol iceberg: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	if rep.Protocol != "iceberg" || rep.Iceberg == nil || rep.Iceberg.System != "iceberg" || rep.Etcd != nil {
		t.Fatalf("report %s", raw)
	}
	for _, r := range []*bench.Result{rep.Raftcat, rep.Iceberg} {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 ||
			r.ClientCommitsMin <= 0 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if rep.IcebergThroughputRatio <= 0 || rep.IcebergP99Ratio <= 0 || len(rep.IcebergRoundRatios) != 2 {
		t.Fatalf("ratios %v, %v by round %v", rep.IcebergThroughputRatio, rep.IcebergP99Ratio, rep.IcebergRoundRatios)
	}
	if !strings.Contains(string(output), "iceberg/delta: throughput x") {
		t.Errorf("no comparison printed:\n%s", output)
	}
}

// TestBenchNetHTTPRequestBalancedSmoke runs `raftcat bench` with the
// pooled net/http client and every request sent to the next node: both
// paths must commit and verify, and the report must say where a commit's
// cost went (client CPU, relays to the leader, retries). Round robin
// sends about two commits in three to a follower, which relays them.
func TestBenchNetHTTPRequestBalancedSmoke(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	profilePath := filepath.Join(t.TempDir(), "writers.pprof")
	output, err := exec.Command(bin, "bench", "--protocol", "iceberg", "--client", "nethttp", "--balance", "request",
		"--duration", "2s", "--warmup", "1s", "--rounds", "2", "--clients", "4", "--tables", "2", "--out", out,
		"--cpu-profile", profilePath).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench --client nethttp --balance request: %v\n%s", err, output)
	}
	rep := readBenchReport(t, out)
	if rep.Client != "nethttp" || rep.Balance != "request" {
		t.Fatalf("report says client %q, balance %q", rep.Client, rep.Balance)
	}
	for _, r := range []*bench.Result{rep.Raftcat, rep.Iceberg} {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.ClientCPUMsPerCommit <= 0 || !r.RelaysCounted ||
			r.RequestsPerCommit < 2 || r.RelayedPerCommit < 0.4 || r.RelayedPerCommit > r.RequestsPerCommit ||
			r.ClientRunWaitMsPerCommit <= 0 || r.ClientRunWaitP99Ms <= 0 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if n, err := gunzippedSize(profilePath); err != nil || n == 0 {
		t.Errorf("--cpu-profile wrote no profile of the writers (a gzipped protocol buffer): %d bytes, %v", n, err)
	}
	if !strings.Contains(string(output), "per commit: client CPU") || !strings.Contains(string(output), "nethttp client, balanced by request") {
		t.Errorf("no client costs printed:\n%s", output)
	}
	refused, err := exec.Command(bin, "bench", "--balance", "request", "--target", "leader").CombinedOutput()
	if err == nil || !strings.Contains(string(refused), "--balance request") {
		t.Errorf("--balance request with --target leader: %v\n%s", err, refused)
	}
}

// gunzippedSize is the size of the gzipped file at path, uncompressed.
func gunzippedSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, z)
}

// TestBenchLanceSmoke runs `raftcat bench --protocol lance` for a few
// seconds: version/create and batch-commit commits on the Lance Namespace
// API of the cluster it starts must both be acknowledged, verify every
// table afterwards and be written as JSON.
func TestBenchLanceSmoke(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--protocol", "lance", "--duration", "1s", "--warmup", "0s", "--rounds", "2",
		"--clients", "4", "--lance-tables", "2", "--lance-batch", "3", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench --protocol lance: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.LanceReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	if rep.Protocol != "lance" || rep.Tables != 2 || rep.Batch != 3 || rep.Clients != 4 || rep.Rounds != 2 || rep.DurationS != 1 {
		t.Fatalf("report %s", raw)
	}
	for _, r := range []*bench.Result{rep.Commits, rep.Batches} {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if !strings.Contains(string(output), "commits/s") || !strings.Contains(string(output), "batches/s") {
		t.Errorf("no human summary printed:\n%s", output)
	}
}

// TestBenchToTheLeader runs `raftcat bench --target leader` against three
// real processes: every request must go to the node that leads, found as a
// load balancer checking GET /readyz?leader finds it. The URLs list the
// followers first, and then leave the leader out: its address then comes
// from the followers' answers.
func TestBenchToTheLeader(t *testing.T) {
	procs := startProcesses(t, 3)
	leader := func() string {
		for _, p := range procs {
			if testcluster.Do(t, http.MethodGet, p.url+"/v1/cluster", nil).Body["state"] == "Leader" {
				return p.url
			}
		}
		return ""
	}
	before := leader()
	var followers []string
	for _, p := range procs {
		if p.url != before {
			followers = append(followers, p.url)
		}
	}
	bin := raftcatBinary(t)
	for _, urls := range [][]string{append(slices.Clone(followers), before), followers} {
		out := filepath.Join(t.TempDir(), "bench.json")
		output, err := exec.Command(bin, "bench", "--target", "leader", "--urls", strings.Join(urls, ","),
			"--duration", "1s", "--warmup", "0s", "--clients", "2", "--tables", "1", "--out", out).CombinedOutput()
		if err != nil {
			t.Fatalf("raftcat bench --target leader --urls %v: %v\n%s", urls, err, output)
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rep bench.Report
		if err := json.Unmarshal(raw, &rep); err != nil || rep.Target != "leader" || rep.Raftcat == nil ||
			rep.Raftcat.Commits == 0 || rep.Raftcat.Errors != 0 {
			t.Fatalf("result %s (%v)\n%s", raw, err, output)
		}
		if after := leader(); rep.LeaderURL != before && rep.LeaderURL != after {
			t.Fatalf("--urls %v: requests went to %q, but %s led before and %s after", urls, rep.LeaderURL, before, after)
		}
	}
}

// TestBenchAgainstMissingEtcdSaysWhatToInstall asks for the etcd
// comparison with a binary that does not exist.
func TestBenchAgainstMissingEtcdSaysWhatToInstall(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--duration", "1s", "--warmup", "0s", "--clients", "1", "--tables", "1",
		"--against-etcd", "--etcd-bin", "/nonexistent/etcd", "--out", out).CombinedOutput()
	if err == nil {
		t.Fatalf("bench succeeded without etcd:\n%s", output)
	}
	if !strings.Contains(string(output), "etcd-server") {
		t.Fatalf("error does not say what to install:\n%s", output)
	}
}

// TestBenchAgainstPostgres runs `raftcat bench --against-postgres` for a
// few seconds: PostgreSQL, a primary with two synchronous streaming
// replicas that the bench starts from Debian's postgresql package (which CI
// installs; without it the test fails), must commit, verify every table
// (and its replicas) afterwards and be compared with raftcat; once the
// bench has exited no PostgreSQL process and no directory of it remain.
func TestBenchAgainstPostgres(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--against-postgres", "--duration", "2s", "--warmup", "1s", "--rounds", "2",
		"--clients", "4", "--tables", "2", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench --against-postgres: %v\n%s", err, output)
	}
	if left := postgresLeft(t, string(output)); len(left) > 0 {
		t.Fatalf("left after the bench:\n%s", strings.Join(left, "\n"))
	}
	rep := readBenchReport(t, out)
	for _, r := range []*bench.Result{rep.Raftcat, rep.Postgres} {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 ||
			r.ClientCommitsMin <= 0 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if rep.Postgres.System != "postgres (primary + 2 sync replicas, ANY 1)" || rep.PostgresVersion == "" || rep.Etcd != nil {
		t.Fatalf("postgres result %q, version %q, etcd %v", rep.Postgres.System, rep.PostgresVersion, rep.Etcd)
	}
	if rep.Postgres.ServerCPUSeconds <= 0 {
		t.Errorf("no server CPU accounted to PostgreSQL: %+v", rep.Postgres)
	}
	if rep.PostgresThroughputRatio <= 0 || rep.PostgresP50Ratio <= 0 || rep.PostgresP99Ratio <= 0 ||
		len(rep.PostgresRoundRatios) != 2 || rep.PostgresRoundRatios[0] <= 0 || rep.PostgresRoundRatios[1] <= 0 {
		t.Fatalf("ratios %v, %v, %v, by round %v", rep.PostgresThroughputRatio, rep.PostgresP50Ratio, rep.PostgresP99Ratio, rep.PostgresRoundRatios)
	}
	for _, want := range []string{"r1: streaming quorum, r2: streaming quorum", "synchronous_standby_names 'ANY 1 (r1, r2)', synchronous_commit on",
		"\npostgres (primary + 2 sync replicas, ANY 1) ", "raftcat/postgres: throughput x", "raftcat/postgres throughput ratio by round: x"} {
		if !strings.Contains(string(output), want) {
			t.Errorf("no %q in the output:\n%s", want, output)
		}
	}
}

// TestBenchAgainstLonePostgres runs the PostgreSQL comparison with
// --postgres-replicas 0: one primary, no synchronous standbys.
func TestBenchAgainstLonePostgres(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--against-postgres", "--postgres-replicas", "0", "--duration", "1s", "--warmup", "0s",
		"--clients", "2", "--tables", "1", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench --against-postgres --postgres-replicas 0: %v\n%s", err, output)
	}
	if left := postgresLeft(t, string(output)); len(left) > 0 {
		t.Fatalf("left after the bench:\n%s", strings.Join(left, "\n"))
	}
	rep := readBenchReport(t, out)
	if r := rep.Postgres; r == nil || r.System != "postgres (lone primary)" || r.Commits == 0 || r.Errors != 0 || !r.Verified {
		t.Fatalf("postgres result %+v\n%s", r, output)
	}
	if rep.PostgresThroughputRatio <= 0 || len(rep.PostgresRoundRatios) != 0 {
		t.Fatalf("ratio %v, by round %v", rep.PostgresThroughputRatio, rep.PostgresRoundRatios)
	}
	if strings.Contains(string(output), "pg_stat_replication") || !strings.Contains(string(output), "synchronous_standby_names '',") {
		t.Errorf("replication set up for a lone primary:\n%s", output)
	}
}

// TestBenchAgainstPostgresInterrupted sends the bench SIGINT (Ctrl-C) as
// its PostgreSQL window begins (raftcat's came first; the signal arrives
// long before the 5 s are up): it must fail, and stop and remove everything
// it started.
func TestBenchAgainstPostgresInterrupted(t *testing.T) {
	bin := raftcatBinary(t)
	cmd := exec.Command(bin, "bench", "--against-postgres", "--duration", "5s", "--warmup", "0s",
		"--clients", "2", "--tables", "1", "--out", filepath.Join(t.TempDir(), "bench.json"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var output strings.Builder
	sent := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		output.WriteString(sc.Text() + "\n")
		if !sent && strings.HasPrefix(sc.Text(), "bench: postgres (") && strings.Contains(sc.Text(), "measured") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	err = cmd.Wait()
	if !sent {
		t.Fatalf("PostgreSQL was never measured (%v):\n%s", err, output.String())
	}
	if err == nil || strings.Contains(output.String(), "result written") {
		t.Fatalf("the interrupted bench succeeded:\n%s", output.String())
	}
	if left := postgresLeft(t, output.String()); len(left) > 0 {
		t.Fatalf("left after Ctrl-C:\n%s", strings.Join(left, "\n"))
	}
	m := regexp.MustCompile(`starting a three-node raftcat cluster in (\S+)`).FindStringSubmatch(output.String())
	if m == nil {
		t.Fatalf("no raftcat cluster start logged:\n%s", output.String())
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the bench's directory %s remains (%v)", m[1], err)
	}
}

// TestBenchAgainstMissingPostgresSaysWhatToInstall asks for the PostgreSQL
// comparison from a directory without it.
func TestBenchAgainstMissingPostgresSaysWhatToInstall(t *testing.T) {
	bin := raftcatBinary(t)
	output, err := exec.Command(bin, "bench", "--duration", "1s", "--warmup", "0s", "--clients", "1", "--tables", "1",
		"--against-postgres", "--postgres-bin-dir", t.TempDir(), "--out", filepath.Join(t.TempDir(), "bench.json")).CombinedOutput()
	if err == nil {
		t.Fatalf("bench succeeded without PostgreSQL:\n%s", output)
	}
	if !strings.Contains(string(output), "apt-get install postgresql") {
		t.Fatalf("error does not say what to install:\n%s", output)
	}
}

func readBenchReport(t *testing.T, path string) bench.Report {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	return rep
}

// postgresLeft lists what remains of the PostgreSQL a bench logged
// starting: processes with its directory on their command line or its
// cluster_name in their title, and the directory.
func postgresLeft(t *testing.T, output string) []string {
	t.Helper()
	m := regexp.MustCompile(`starting PostgreSQL \S+ \(.*\) from \S+ in (\S+) as cluster_name (\S+)-<server>`).FindStringSubmatch(output)
	if m == nil {
		t.Fatalf("no PostgreSQL start logged:\n%s", output)
	}
	dir, tag := m[1], m[2]
	var left []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmdline, dir) || strings.Contains(cmdline, tag) {
			left = append(left, p.Name()+": "+cmdline)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		left = append(left, fmt.Sprintf("directory %s (%v)", dir, err))
	}
	return left
}

// TestBenchSecureSmoke runs `raftcat bench --secure` for a few seconds: a
// cluster with TLS on its HTTP ports, mutual TLS between its nodes and
// encrypted gossip, and the same cluster without them, in alternating
// rounds, must both commit over kept-alive connections, verify every
// table afterwards and be compared.
func TestBenchSecureSmoke(t *testing.T) {
	rep, raw, output, dir := benchComparison(t, "--secure")
	if !rep.Secure || rep.Auth != "token" || rep.TLSOff == nil || rep.TLSOff.System != "tls-off" || rep.AuthOff != nil {
		t.Fatalf("report %s", raw)
	}
	for _, r := range []*bench.Result{rep.Raftcat, rep.TLSOff} {
		if r.Commits == 0 || r.Errors != 0 || !r.Verified || r.ClientCommitsMin <= 0 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if rep.TLSThroughputRatio <= 0 || rep.TLSP99Ratio <= 0 || len(rep.TLSRoundRatios) != 2 {
		t.Fatalf("ratios %v, %v by round %v", rep.TLSThroughputRatio, rep.TLSP99Ratio, rep.TLSRoundRatios)
	}
	if !strings.Contains(string(output), "TLS on/TLS off: throughput x") || !strings.Contains(string(output), "https://127.0.0.1:") {
		t.Errorf("no comparison or no HTTPS nodes printed:\n%s", output)
	}
	checkBreakdown(t, bench.Report{Breakdown: rep.TLSOffBreakdown}, rep.TLSOff.Commits)
	if _, err := os.Stat(filepath.Join(dir, "raftcat", "tls", "ca.pem")); err != nil {
		t.Errorf("the secure cluster's CA: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tls-off", "tls")); !os.IsNotExist(err) {
		t.Errorf("the cluster without TLS has certificates: %v", err)
	}
}

// `raftcat bench --protocol iceberg --against-postgres` compares raftcat
// with iceberg-go's SQL catalog: its help says so, and it refuses etcd
// beside it before starting anything.
func TestBenchIcebergAgainstSQLCatalogFlags(t *testing.T) {
	var out, errOut strings.Builder
	if code := benchCmd([]string{"--help"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "With --protocol iceberg --against-postgres both sides run the Iceberg workload through\niceberg-go") {
		t.Fatalf("help (exit %d) does not describe the SQL catalog comparison:\n%s", code, out.String())
	}
	out.Reset()
	code := benchCmd([]string{"--protocol", "iceberg", "--against-postgres", "--against-etcd", "--out", filepath.Join(t.TempDir(), "b.json")}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "--protocol iceberg --against-postgres runs iceberg-go's SQL catalog; run --against-etcd apart") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	code = benchCmd([]string{"--protocol", "iceberg", "--secure", "--out", filepath.Join(t.TempDir(), "b.json")}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "--secure starts the clusters itself") {
		t.Fatalf("--secure with the Iceberg workload alone: exit %d, stderr %q", code, errOut.String())
	}
}
