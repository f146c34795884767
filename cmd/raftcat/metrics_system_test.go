package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsAddrAndJSONLogs runs a node with --metrics-addr and
// --log-format=json: /metrics moves to the private listener (and is gone
// from the HTTP one), and every log line is a JSON object.
func TestMetricsAddrAndJSONLogs(t *testing.T) {
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	p := startProcesses(t, 1, "--metrics-addr", metricsAddr, "--log-format", "json")[0]

	body := get(t, "http://"+metricsAddr+"/metrics", http.StatusOK)
	for _, want := range []string{"raftcat_build_info{", "raftcat_raft_term ", "raftcat_http_requests_total{"} {
		if !strings.Contains(body, want) {
			t.Errorf("--metrics-addr's /metrics lacks %q", want)
		}
	}
	get(t, p.url+"/metrics", http.StatusNotFound)

	lines := strings.Split(strings.TrimSpace(p.log.String()), "\n")
	for _, line := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil || obj["msg"] == nil || obj["level"] == nil {
			t.Fatalf("log line is not a JSON record: %q", line)
		}
	}
	if !strings.Contains(p.log.String(), `"msg":"serving metrics"`) {
		t.Fatalf("the node did not log where it serves metrics:\n%s", p.log.String())
	}
}

func get(t *testing.T, url string, status int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d, want %d: %s", url, resp.StatusCode, status, b)
	}
	return string(b)
}
