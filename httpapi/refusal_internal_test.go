package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A handler's own plain-text error answer is not taken for one the server
// wrote itself: it passes through the wrapped connection unchanged.
func TestRefusalConnLeavesHandlerAnswersAlone(t *testing.T) {
	s := New(nil, Config{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "400 Bad Request", http.StatusBadRequest)
	}))
	srv.Listener = s.Listener(srv.Listener)
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || string(body) != "400 Bad Request\n" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("handler's answer changed: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestRequestPath(t *testing.T) {
	for head, want := range map[string]string{
		"GET /api/2.1/unity-catalog/catalogs/%zz HTTP/1.1\r\nHost: x": "/api/2.1/unity-catalog/catalogs/%zz",
		"\r\nPOST /v1/cluster?x=1 HTTP/1.1\r\n":                       "/v1/cluster",
		"GET /aaaaaaaa":                                               "/aaaaaaaa",
		"\x16\x03\x01 binary":                                         "",
		"":                                                            "",
	} {
		if got := requestPath([]byte(head)); got != want {
			t.Errorf("requestPath(%q) = %q, want %q", head, got, want)
		}
	}
}
