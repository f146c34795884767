package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	gojson "github.com/goccy/go-json"
)

// Go's HTTP server answers some requests itself, before any handler sees
// them: a request line it cannot parse (an invalid percent-escape in the
// path, "%zz"), a malformed header, headers larger than its limit (431),
// an unknown transfer coding (501). It writes those answers as plain text
// straight to the connection and closes it; no hook of net/http reaches
// them. Listener wraps the connections so that such an answer is
// rewritten, as it is written, into the envelope of the protocol whose
// prefix the refused request's path starts with. Nothing else about the
// exchange changes: the connection still closes after the answer.

// refusalHeaders is what Go's server writes after the status line of an
// answer of its own; the answers it writes for handlers always carry a
// Date header and sort Connection before Content-Type, so they never
// match.
const refusalHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// headKeep is how much of a request's start a connection keeps: enough
// for the method and the part of the path that decides the protocol.
const headKeep = 512

// Listener returns ln with its connections wrapped so that the answers Go's
// server gives to requests it refuses itself are in the protocols'
// envelopes (see refusalHeaders). Serve the HTTP server on it.
func (s *Server) Listener(ln net.Listener) net.Listener { return &refusalListener{Listener: ln, s: s} }

type refusalListener struct {
	net.Listener
	s *Server
}

func (l *refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusalConn{Conn: c, s: l.s}, nil
}

// refusalConn keeps the start of what was read since its last write, the
// start of the request being read, to place a refusal in its protocol.
// (A client that pipelines requests may have sent the refused one in the
// same read as an earlier one; its answer then takes the envelope of the
// first request of that read.)
type refusalConn struct {
	net.Conn
	s       *Server
	mu      sync.Mutex
	head    []byte
	written bool // a write happened since head was last reset
}

func (c *refusalConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.written {
			c.head, c.written = c.head[:0], false
		}
		if room := headKeep - len(c.head); room > 0 {
			c.head = append(c.head, p[:min(n, room)]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *refusalConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	head := c.head
	c.written = true
	c.mu.Unlock()
	status, ok := refusalStatus(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(c.s.refusal(status, p, requestPath(head))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite half-closes the connection as the server does before it
// stops reading a refused request (so the client sees the answer end).
func (c *refusalConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// refusalStatus recognises an answer Go's server wrote itself.
func refusalStatus(p []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 4 || rest[3] != ' ' {
		return 0, false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil || status < 400 {
		return 0, false
	}
	eol := bytes.IndexByte(rest, '\r')
	return status, eol >= 0 && bytes.HasPrefix(rest[eol:], []byte(refusalHeaders))
}

// requestPath is the path of the request line head starts with ("" when
// head does not start with one).
func requestPath(head []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimLeft(head, "\r\n"), []byte("\n"))
	_, target, ok := strings.Cut(string(line), " ")
	if !ok || !strings.HasPrefix(target, "/") {
		return ""
	}
	target, _, _ = strings.Cut(target, " ")
	target, _, _ = strings.Cut(target, "?")
	return target
}

// refusal renders the answer to a refused request in its protocol's
// envelope.
func (s *Server) refusal(status int, goAnswer []byte, path string) []byte {
	_, body := s.mappingOf(path).Render(Problem{Status: status, Message: refusalMessage(status, goAnswer)})
	enc, err := gojson.Marshal(body)
	if err != nil { // the mappings render plain maps of strings and numbers
		enc = []byte(`{}`)
	}
	enc = append(enc, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(enc), enc)
}

// refusalMessage says why the request was refused: Go's own reason when
// it gave one ("400 Bad Request: invalid header name"), else ours.
func refusalMessage(status int, goAnswer []byte) string {
	_, text, _ := bytes.Cut(goAnswer, []byte(refusalHeaders))
	_, reason, ok := bytes.Cut(text, []byte(": "))
	switch {
	case ok:
		return "Malformed request: " + string(reason)
	case status == 431:
		return "Request header fields too large: the request line and headers exceed the server's limit."
	case status == 501:
		return "Unsupported transfer encoding."
	case status == 400:
		return "Malformed request: the request line or a header could not be parsed (for example an invalid percent-escape in the path)."
	}
	return http.StatusText(status)
}
