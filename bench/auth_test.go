package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Both of the bench's ways to send a request, the shared net/http
// client and a writer's own connection, carry the token; a request with
// a credential of its own (a Delta Sharing recipient's) keeps it; with
// no token nothing is added.
func TestBearerReachesEveryRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	for _, token := range []bearer{"s3cret-token-of-the-bench", ""} {
		want := ""
		if token != "" {
			want = "Bearer " + string(token)
		}
		s := &raftcatSystem{token: token, http: &http.Client{Transport: token.transport(http.DefaultTransport)}}
		var buf bytes.Buffer
		if _, got, err := s.send(context.Background(), http.MethodGet, srv.URL, nil, &buf); err != nil || string(got) != want {
			t.Errorf("shared client, token %q: sent %q (%v)", token, got, err)
		}
		c := newConnClient(token, nil)
		if _, got, err := c.send(context.Background(), http.MethodGet, srv.URL, nil, &buf); err != nil || string(got) != want {
			t.Errorf("own connection, token %q: sent %q (%v)", token, got, err)
		}
		c.close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Authorization", "Bearer recipient")
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "Bearer recipient" {
			t.Errorf("token %q: a recipient's request sent %q", token, got)
		}
	}
}
