package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/raftcat/raftcat/internal/localcluster"
)

// etcdSystem is a three-member etcd on loopback, driven with the
// compare-and-swap a catalog-less commit coordinator would use: read the
// table's version key, then one transaction that compares it and puts
// version+1 together with a commit record.
type etcdSystem struct {
	procs   []*exec.Cmd
	clients []*clientv3.Client // one per member
	leader  int                // index of the leader's client
	spread  bool
	acked   tableCounts
}

// findEtcd resolves the etcd binary before anything is started.
func findEtcd(cfg *Config) error {
	if cfg.EtcdBin == "" {
		cfg.EtcdBin = "etcd"
	}
	path, err := exec.LookPath(cfg.EtcdBin)
	if err != nil {
		return fmt.Errorf("--against-etcd needs an etcd server binary (Debian: apt-get install etcd-server): %w", err)
	}
	cfg.EtcdBin = path
	return nil
}

// startEtcd starts the members (each with its own data dir on the same
// disk as raftcat's) and waits until they elect a leader.
func startEtcd(ctx context.Context, cfg Config, dir string, log io.Writer) (*etcdSystem, error) {
	path := cfg.EtcdBin
	ports, err := localcluster.FreePorts(6)
	if err != nil {
		return nil, err
	}
	var peers []string
	for i := 0; i < 3; i++ {
		peers = append(peers, fmt.Sprintf("e%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	fmt.Fprintf(log, "bench: starting a three-member etcd (%s) in %s\n", path, dir)
	s := &etcdSystem{spread: !cfg.Leader}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("e%d", i+1)
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(path, "--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "raftcat-bench")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			s.close()
			return nil, fmt.Errorf("start etcd %s: %w", name, err)
		}
		s.procs = append(s.procs, cmd)
		cl, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			s.close()
			return nil, err
		}
		s.clients = append(s.clients, cl)
	}
	if err := s.waitLeader(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *etcdSystem) waitLeader(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		for i, cl := range s.clients {
			c, cancel := context.WithTimeout(ctx, time.Second)
			st, err := cl.Status(c, cl.Endpoints()[0])
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				s.leader = i
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("etcd elected no leader within 60 s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *etcdSystem) name() string { return "etcd" }

func (s *etcdSystem) verify(ctx context.Context, f inFlight) error {
	return s.acked.check(func(t int) (int64, error) {
		got, err := s.clients[s.leader].Get(ctx, versionKey(t))
		if err != nil || len(got.Kvs) != 1 {
			return 0, fmt.Errorf("read version of table %d: %v", t, err)
		}
		return strconv.ParseInt(string(got.Kvs[0].Value), 10, 64)
	}, f)
}

func (s *etcdSystem) pids() []int {
	var out []int
	for _, p := range s.procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

func (s *etcdSystem) close() {
	for _, cl := range s.clients {
		cl.Close()
	}
	for _, p := range s.procs {
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
	}
}

func versionKey(table int) string { return fmt.Sprintf("/bench/t%d/version", table) }

func (s *etcdSystem) prepare(ctx context.Context, tables, clients int) ([]committer, error) {
	for t := 0; t < tables; t++ {
		if _, err := s.clients[s.leader].Put(ctx, versionKey(t), "0"); err != nil {
			return nil, err
		}
	}
	s.acked = make(tableCounts, tables)
	out := make([]committer, clients)
	for i := range out {
		cl := s.clients[s.leader]
		if s.spread {
			cl = s.clients[i%len(s.clients)]
		}
		out[i] = &etcdWriter{kv: cl, table: i % tables, id: i, acked: &s.acked[i%tables]}
	}
	return out, nil
}

// etcdWriter commits with a read and a compare-and-swap transaction; a
// failed comparison is the conflict, and the writer rereads and retries.
type etcdWriter struct {
	kv    clientv3.KV
	table int
	id    int
	seq   int
	acked *atomic.Int64
	times requestTimes
}

func (w *etcdWriter) requests() *requestTimes { return &w.times }

func (w *etcdWriter) commit(ctx context.Context) (int, error) {
	conflicts := 0
	key := versionKey(w.table)
	for {
		start := time.Now()
		got, err := w.kv.Get(ctx, key)
		w.times.loads.since(start)
		if err != nil {
			return conflicts, fmt.Errorf("get: %v", err)
		}
		if len(got.Kvs) != 1 {
			return conflicts, fmt.Errorf("get: version key %s missing", key)
		}
		cur := string(got.Kvs[0].Value)
		v, err := strconv.ParseInt(cur, 10, 64)
		if err != nil {
			return conflicts, err
		}
		w.seq++
		now := time.Now().UnixMilli()
		record := fmt.Sprintf(`{"version":%d,"timestamp":%d,"file-name":"%020d.w%d-%d.json","file-size":1024,"file-modification-timestamp":%d}`,
			v+1, now, v+1, w.id, w.seq, now)
		start = time.Now()
		resp, err := w.kv.Txn(ctx).
			If(clientv3.Compare(clientv3.Value(key), "=", cur)).
			Then(clientv3.OpPut(key, strconv.FormatInt(v+1, 10)),
				clientv3.OpPut(fmt.Sprintf("/bench/t%d/commits/%020d", w.table, v+1), record)).
			Commit()
		w.times.attempts.since(start)
		if err != nil {
			return conflicts, fmt.Errorf("txn: %v", err)
		}
		if resp.Succeeded {
			w.acked.Add(1)
			return conflicts, nil
		}
		conflicts++
	}
}
