package chaos

import (
	"crypto/tls"
	"net/http"
	"sync/atomic"
)

// drillToken is the API token every request of the drill carries ("" for
// none): the workload's, the final loads' and the checks'. Run sets it
// before any client starts; both of the drill's HTTP clients (httpc and
// probe) send it through bearerTransport, so no call site handles it.
// One process runs one drill at a time, as `raftcat chaos` does.
var drillToken atomic.Value // string

func setToken(token string) { drillToken.Store(token) }

// bearerTransport adds the drill's token to every request without an
// Authorization header of its own.
type bearerTransport struct{ base http.RoundTripper }

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if token, _ := drillToken.Load().(string); token != "" && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context()) // a RoundTripper must not change the request it was given
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if base := drillTLS.Load(); base != nil {
		return base.RoundTrip(r)
	}
	return t.base.RoundTrip(r)
}

// drillTLS is the transport that trusts a secure cluster's CA (nil: the
// drill's cluster serves plain HTTP). Run sets it once the cluster is up.
var drillTLS atomic.Pointer[http.Transport]

// setTLS makes the drill's requests trust what c trusts (nil: plain).
func setTLS(c *tls.Config) {
	if c == nil {
		drillTLS.Store(nil)
		return
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig, t.MaxIdleConnsPerHost = c, 64
	drillTLS.Store(t)
}

// drillTransport is the transport of the drill's HTTP clients.
var drillTransport http.RoundTripper = bearerTransport{base: http.DefaultTransport}
