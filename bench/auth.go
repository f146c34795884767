package bench

import "net/http"

// bearer is the API token the bench sends to a raftcat cluster run with
// --auth=token ("" sends none). authorize is the one place it goes onto
// a request: the shared net/http client's transport and every writer's
// own connection (connClient) call it.
type bearer string

// authorize sets the token on a request without an Authorization header
// of its own (a Delta Sharing query carries its recipient's token).
func (b bearer) authorize(h http.Header) {
	if b != "" && h.Get("Authorization") == "" {
		h.Set("Authorization", "Bearer "+string(b))
	}
}

// transport is base sending the token with every request.
func (b bearer) transport(base http.RoundTripper) http.RoundTripper {
	if b == "" {
		return base
	}
	return bearerTransport{token: b, base: base}
}

type bearerTransport struct {
	token bearer
	base  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context()) // a RoundTripper must not change the request it was given
		t.token.authorize(r.Header)
	}
	return t.base.RoundTrip(r)
}
