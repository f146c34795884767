package logging

import (
	"bytes"
	"strings"
	"sync"
)

// Capture collects log output from concurrent writers, for tests that
// read what a node or process logged while it runs.
type Capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// String is everything written so far.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// Lines returns the lines that contain every one of want.
func (c *Capture) Lines(want ...string) []string {
	var out []string
	for _, l := range strings.Split(c.String(), "\n") {
		all := l != ""
		for _, w := range want {
			all = all && strings.Contains(l, w)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}
