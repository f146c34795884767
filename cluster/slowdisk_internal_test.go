package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/fsm"
)

// slowLog delays every write by delay (nanoseconds; 0: none).
type slowLog struct {
	raft.LogStore
	delay *atomic.Int64
}

func (l slowLog) StoreLogs(logs []*raft.Log) error {
	time.Sleep(time.Duration(l.delay.Load())) // the disk's latency
	return l.LogStore.StoreLogs(logs)
}

func (l slowLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

// openThree opens three nodes in this process that form one cluster;
// each node's log writes are delayed by its entry of the returned delays.
func openThree(t *testing.T, tune func(*Config)) ([]*Node, []*atomic.Int64) {
	t.Helper()
	var mu sync.Mutex
	delays := map[raft.LogStore]*atomic.Int64{}
	var order []*atomic.Int64
	wrapLogStore = func(s raft.LogStore) raft.LogStore {
		mu.Lock()
		defer mu.Unlock()
		d := new(atomic.Int64)
		delays[s] = d
		order = append(order, d)
		return slowLog{LogStore: s, delay: d}
	}
	t.Cleanup(func() { wrapLogStore = nil })
	var nodes []*Node
	for i, id := range []string{"n1", "n2", "n3"} {
		dir := t.TempDir()
		cfg := Config{NodeID: id, DataDir: dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
			BootstrapExpect: 3, StorageRoot: "file://" + dir + "/warehouse", HeartbeatTimeout: 300 * time.Millisecond,
			ElectionTimeout: 300 * time.Millisecond,
			Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		if i > 0 {
			cfg.Join = []string{nodes[0].GossipAddr()}
		}
		tune(&cfg)
		n, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Shutdown() })
		nodes = append(nodes, n)
	}
	return nodes, order
}

// establishedLeader waits for a node of nodes to lead and be ready.
func establishedLeader(t *testing.T, nodes []*Node) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range nodes {
			if n.established() {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	t.Fatal("no leader")
	return -1
}

// A leader whose log writes turn slow hands leadership to a node whose
// disk is not.
func TestALeaderWithASlowDiskHandsLeadershipAway(t *testing.T) {
	nodes, delays := openThree(t, func(c *Config) {
		c.SlowDiskThreshold, c.SlowDiskWindow = 50*time.Millisecond, time.Second
	})
	slow := establishedLeader(t, nodes)
	delays[slow].Store(int64(100 * time.Millisecond))
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, _ = nodes[slow].Propose(ctx, &fsm.CreateCatalog{ID: fmt.Sprintf("c%d", i), Name: fmt.Sprintf("c%d", i)})
		cancel()
		if !nodes[slow].IsLeader() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader with the slow disk kept leadership")
		}
	}
	if now := establishedLeader(t, nodes); now == slow {
		t.Fatalf("leadership came back to the slow node %d", slow)
	}
}

// A leader whose disk turns full hands leadership to a node with room,
// which takes writes again.
func TestALeaderWithAFullDiskHandsLeadershipAway(t *testing.T) {
	var full atomic.Value // the data dir of the node whose disk is full
	full.Store("")
	freeBytes = func(dir string) (int64, error) {
		if dir == full.Load().(string) {
			return 1 << 20, nil
		}
		return 1 << 40, nil
	}
	t.Cleanup(func() { freeBytes = statfsFree })
	nodes, _ := openThree(t, func(c *Config) { c.DiskCheckInterval = 50 * time.Millisecond })
	leader := establishedLeader(t, nodes)
	full.Store(nodes[leader].cfg.DataDir)
	deadline := time.Now().Add(30 * time.Second)
	for {
		now := establishedLeader(t, nodes)
		if now != leader {
			if _, _, err := nodes[now].Propose(context.Background(), &fsm.CreateCatalog{ID: "c-moved", Name: "moved"}); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader with the full disk kept leadership")
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}
