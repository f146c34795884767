package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sendPartial sends a request head and part of its body, then nothing
// more, and returns what the server does within limit: the answer's
// status line, or "closed" if it only closed the connection.
func sendPartial(t *testing.T, url, head, body string, limit time.Duration) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head+body); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(limit))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	switch {
	case err == nil:
		resp.Body.Close()
		return resp.Status
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return "closed"
	}
	t.Fatalf("no answer within %s: %v", limit, err)
	return ""
}

// A request that announces more body than it sends, or a chunked body
// that stops, is cut off at the read timeout, on the leader and on
// followers, instead of holding its connection for ever.
func TestStalledRequestBodiesAreCutOff(t *testing.T) {
	procs := startProcesses(t, 3, "--http-read-timeout", "1s")
	path := "/api/2.1/unity-catalog/catalogs"
	cases := map[string]string{
		"content-length": fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", path),
		"chunked":        fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n", path),
	}
	for _, p := range procs {
		for name, head := range cases {
			got := sendPartial(t, p.url, head, `{"na`, 15*time.Second)
			if got != "closed" && !strings.HasPrefix(got, "4") {
				t.Errorf("%s, %s: %s, want a 4xx or the connection closed", p.name, name, got)
			}
		}
	}
}
