package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// scaleDeltaBase is the Delta API prefix.
const scaleDeltaBase = "/api/2.1/unity-catalog/delta/v1"

// scaleClient talks to the nodes over their real HTTP API.
type scaleClient struct {
	http *http.Client // requests bounded by their context only (restores of large snapshots)

	mu    sync.Mutex
	known map[string]scaleDigest // each node's last digest answer
}

func newScaleClient() *scaleClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	return &scaleClient{http: &http.Client{Transport: tr}, known: map[string]scaleDigest{}}
}

// scaleStatus is the part of /v1/cluster the bench reads.
type scaleStatus struct {
	NodeID            string `json:"node_id"`
	State             string `json:"state"`
	LeaderID          string `json:"leader_id"`
	AppliedIndex      uint64 `json:"applied_index"`
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
	SnapshotRestores  uint64 `json:"snapshot_restores"`
}

type scaleDigest struct {
	NodeID       string `json:"node_id"`
	AppliedIndex uint64 `json:"applied_index"`
	Digest       string `json:"digest"`
}

// getJSON GETs url into out, failing on any status but 200.
func (c *scaleClient) getJSON(ctx context.Context, url string, timeout time.Duration, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

func (c *scaleClient) status(ctx context.Context, url string) (scaleStatus, error) {
	var st scaleStatus
	err := c.getJSON(ctx, url+"/v1/cluster", 5*time.Second, &st)
	return st, err
}

// digest asks a node for its state digest; at a million tables computing
// it takes seconds.
func (c *scaleClient) digest(ctx context.Context, url string) (scaleDigest, error) {
	var d scaleDigest
	err := c.getJSON(ctx, url+"/v1/cluster/state-digest", 10*time.Minute, &d)
	return d, err
}

// leader returns the index in urls/names of the node the cluster sees as
// leader, polling until one is known or ctx ends.
func (c *scaleClient) leader(ctx context.Context, urls, names []string) (int, error) {
	for {
		for _, u := range urls {
			st, err := c.status(ctx, u)
			if err != nil || st.LeaderID == "" {
				continue
			}
			if i := slices.Index(names, st.LeaderID); i >= 0 {
				return i, nil
			}
		}
		if err := scaleSleep(ctx, 200*time.Millisecond); err != nil {
			return -1, fmt.Errorf("no leader: %w", err)
		}
	}
}

// restore uploads a snapshot file to url as `raftcat snapshot restore`
// does, and returns once the cluster has accepted it.
func (c *scaleClient) restore(ctx context.Context, url, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/cluster/restore", f)
	if err != nil {
		return err
	}
	req.ContentLength = fi.Size()
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("restore %s: %w", file, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("restore %s: HTTP %d: %s", file, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// caughtUp polls url until its applied index reaches the leader's.
func (c *scaleClient) caughtUp(ctx context.Context, url, leaderURL string) (scaleStatus, error) {
	for {
		ls, lerr := c.status(ctx, leaderURL)
		st, err := c.status(ctx, url)
		if lerr == nil && err == nil && ls.AppliedIndex > 0 && st.AppliedIndex >= ls.AppliedIndex {
			return st, nil
		}
		if err := scaleSleep(ctx, 100*time.Millisecond); err != nil {
			return st, fmt.Errorf("%s not caught up with the leader (applied %d, leader %d): %w", url, st.AppliedIndex, ls.AppliedIndex, err)
		}
	}
}

// converged waits until every node in urls has caught up with the leader
// and has the leader's state digest, and returns that digest.
func (c *scaleClient) converged(ctx context.Context, urls []string, leaderURL string) (string, error) {
	for {
		for _, u := range urls {
			if _, err := c.caughtUp(ctx, u, leaderURL); err != nil {
				return "", err
			}
		}
		ds, err := c.digests(ctx, append([]string{leaderURL}, urls...))
		if err != nil {
			return "", err
		}
		want, same := ds[0], true
		for _, d := range ds[1:] {
			switch {
			case d.AppliedIndex == want.AppliedIndex && d.Digest != want.Digest:
				return "", fmt.Errorf("%s diverged: digest %s at index %d, leader has %s", d.NodeID, d.Digest, d.AppliedIndex, want.Digest)
			case d.Digest != want.Digest:
				same = false // a write landed between the answers
			}
		}
		if same {
			return want.Digest, nil
		}
		if err := scaleSleep(ctx, 500*time.Millisecond); err != nil {
			return "", fmt.Errorf("replicas did not converge to the leader's digest: %w", err)
		}
	}
}

// digests asks every node for its digest at once (each takes seconds at
// a million tables). A node whose applied index has not moved since its
// last answer is not asked again: its digest at that index is fixed.
func (c *scaleClient) digests(ctx context.Context, urls []string) ([]scaleDigest, error) {
	out := make([]scaleDigest, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		if i > 0 && slices.Contains(urls[:i], u) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.status(ctx, u)
			c.mu.Lock()
			d, ok := c.known[u]
			c.mu.Unlock()
			if err == nil && ok && d.AppliedIndex == st.AppliedIndex {
				out[i] = d
				return
			}
			if out[i], errs[i] = c.digest(ctx, u); errs[i] == nil {
				c.mu.Lock()
				c.known[u] = out[i]
				c.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i, u := range urls {
		if j := slices.Index(urls, u); j < i {
			out[i], errs[i] = out[j], errs[j]
		}
	}
	return out, errors.Join(errs...)
}

// forget drops what a node answered before, for a restarted process.
func (c *scaleClient) forget(url string) {
	c.mu.Lock()
	delete(c.known, url)
	c.mu.Unlock()
}

// tableURL is table i's Delta API path on a node.
func scaleTableURL(base string, i, schemas int) string {
	return fmt.Sprintf("%s%s/catalogs/%s/schemas/%s/tables/%s", base, scaleDeltaBase, scaleCatalog,
		scaleSchemaName(i%schemas), scaleTableName(i))
}

// load is one Delta API load: its latency (request to last body byte) and
// the latest version it reported.
func (c *scaleClient) load(ctx context.Context, url string) (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return took, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return took, 0, fmt.Errorf("load %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var out struct {
		Latest int64 `json:"latest-table-version"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return took, 0, err
	}
	return took, out.Latest, nil
}

// loads runs n sequential loads of random tables, spread round-robin over
// the nodes as clients would send them (followers forward to the leader),
// after a short unmeasured warm-up. Every table must be at least at
// wantVersion.
func (c *scaleClient) loads(ctx context.Context, urls []string, n, tables, schemas int, wantVersion int64, rng *rand.Rand) (ScaleLoad, error) {
	out := ScaleLoad{Tables: tables, Loads: n}
	warm := min(n, 50)
	lat := make([]time.Duration, 0, n)
	for k := 0; k < warm+n; k++ {
		url := scaleTableURL(urls[k%len(urls)], rng.IntN(tables), schemas)
		took, latest, err := c.load(ctx, url)
		if err != nil {
			return out, err
		}
		if latest < wantVersion { // the measured HTTP commits move a few tables on
			return out, fmt.Errorf("load %s: latest version %d, want at least %d", url, latest, wantVersion)
		}
		if k >= warm {
			lat = append(lat, took)
		}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	pct := func(p float64) float64 { return scaleMs(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	out.P50Ms, out.P90Ms, out.P99Ms = pct(0.50), pct(0.90), pct(0.99)
	out.MaxMs, out.MeanMs = scaleMs(lat[len(lat)-1]), scaleMs(sum/time.Duration(len(lat)))
	return out, nil
}

// commit ratifies version v of table i through the Delta API, reporting
// v-1 as published.
func (c *scaleClient) commit(ctx context.Context, base string, i, schemas int, v int64) error {
	id := scaleTableID(i)
	now := time.Now().UnixMilli()
	body := fmt.Sprintf(`{"requirements":[{"type":"assert-table-uuid","uuid":%q}],"updates":[`+
		`{"action":"add-commit","commit":{"version":%d,"timestamp":%d,"file-name":%q,"file-size":%d,"file-modification-timestamp":%d}},`+
		`{"action":"set-latest-backfilled-version","latest-published-version":%d}]}`,
		id, v, now, scaleCommitFile(v, id), 4096+v, now, v-1)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	url := scaleTableURL(base, i, schemas)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("commit %s version %d: HTTP %d: %s", url, v, resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	return nil
}

// waitReady polls url's /readyz until it answers 200.
func (c *scaleClient) waitReady(ctx context.Context, url string) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url+"/readyz", nil)
		resp, err := c.http.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		if err == nil && resp.StatusCode == http.StatusOK {
			return nil
		}
		if err := scaleSleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("%s not ready: %w", url, err)
		}
	}
}

// scaleSleep waits d, or returns ctx's error if it ends first.
func scaleSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func scaleMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
