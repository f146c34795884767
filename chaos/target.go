package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/raftcat/raftcat/internal/localcluster"
)

// target is a cluster a drill runs against and injects faults into.
type target interface {
	URLs() []string
	Names() []string
	LeaderIndex() int
	Digests() ([]string, error)
	WaitReady(ctx context.Context) error
	FaultKinds() []string
	// inject starts fault f (its Kind) on node i, and may fill in what
	// the node did; so may the heal it returns.
	inject(f *Fault, i int, rng *rand.Rand) (heal func() error, err error)
}

var probe = &http.Client{Timeout: 2 * time.Second, Transport: drillTransport}

// waitReady waits until every node answers /readyz, asking as the
// drill's requests do (over HTTPS when the cluster serves it).
func waitReady(ctx context.Context, urls []string) error {
	return localcluster.WaitReadyWith(ctx, probe, urls)
}

// leaderIndex asks the nodes who leads and returns its index, or -1.
func leaderIndex(urls, names []string) int {
	for _, u := range urls {
		var v struct {
			LeaderID string `json:"leader_id"`
		}
		if getJSON(u+"/v1/cluster", &v) != nil || v.LeaderID == "" {
			continue
		}
		for i, n := range names {
			if n == v.LeaderID {
				return i
			}
		}
	}
	return -1
}

// digests returns every node's "applied index:state digest".
func digests(urls []string) ([]string, error) {
	out := make([]string, len(urls))
	for i, u := range urls {
		var d struct {
			Applied uint64 `json:"applied_index"`
			Digest  string `json:"digest"`
		}
		if err := getJSON(u+"/v1/cluster/state-digest", &d); err != nil {
			return nil, err
		}
		out[i] = fmt.Sprintf("%d:%s", d.Applied, d.Digest)
	}
	return out, nil
}

func getJSON(url string, v any) error {
	resp, err := probe.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
