package chaos

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// cutShort answers 200 and promises a body it never finishes, as a node
// killed mid-answer does.
func cutShort(w http.ResponseWriter, _ *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"metadata\":")
	buf.Flush()
	conn.Close()
}

func TestAnAnswerCutShortIsAnUnknownOutcome(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(cutShort))
	defer srv.Close()
	status, out, err := call(http.MethodGet, srv.URL, nil)
	if err == nil {
		t.Fatalf("call = %d %v, nil error; want the cut recognised", status, out)
	}
	c := &client{id: 1, table: "t", urls: []string{srv.URL}, rng: rand.New(rand.NewPCG(1, 2)), rec: &recorder{start: time.Now()}}
	if _, _, ok := c.load(); ok {
		t.Fatal("a load whose answer was cut short counted as ok")
	}
	if ops := c.rec.snapshot(); len(ops) != 1 || ops[0].Outcome != OutcomeUnknown {
		t.Fatalf("recorded %+v, want one unknown load", ops)
	}
}

func TestAnOKAnswerThatIsNotJSONIsAnUnknownOutcome(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("<html>a proxy page</html>"))
	}))
	defer srv.Close()
	if status, out, err := call(http.MethodGet, srv.URL, nil); err == nil {
		t.Fatalf("call = %d %v, nil error; want a non-JSON 200 refused", status, out)
	}
}
