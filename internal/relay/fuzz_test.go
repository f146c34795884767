package relay

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// FuzzServerFrames feeds arbitrary bytes to a relay server's frame reader
// and request parser, as a broken or hostile peer would send them. Every
// frame read must be answered with a well-formed answer frame carrying its
// id, and the handler only ever sees requests that parsed, with bodies no
// larger than the frame limit.
func FuzzServerFrames(f *testing.F) {
	get := []byte("GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
	post := []byte("POST /y HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
	f.Add(append(appendFrame(nil, 1, len(get)), get...))
	f.Add(append(append(appendFrame(nil, 1, len(get)), get...), append(appendFrame(nil, 2, len(post)), post...)...))
	f.Add(appendFrame(nil, 3, 1<<31))
	f.Add([]byte("\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x09GET /"))
	const limit = 4 << 10
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if n > limit {
			panic("a handler read more than the frame limit")
		}
		w.WriteHeader(http.StatusNoContent)
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReader(bytes.NewReader(in))
		for {
			id, payload, err := readFrame(br, limit)
			if err != nil {
				return
			}
			answer := serveFrame(context.Background(), h, "peer", id, payload)
			gotID, resp, err := readFrame(bufio.NewReader(bytes.NewReader(answer)), MaxFrame)
			if err != nil || gotID != id {
				t.Fatalf("answer frame for id %d: id %d, err %v", id, gotID, err)
			}
			r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(resp)), nil)
			if err != nil {
				t.Fatalf("answer is not an HTTP response: %v", err)
			}
			if r.StatusCode != http.StatusNoContent && r.StatusCode != http.StatusBadRequest {
				t.Fatalf("answer status %d", r.StatusCode)
			}
		}
	})
}
