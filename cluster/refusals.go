package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/internal/tlsutil"
)

// refusal is why the cluster port refused a connection: a metric label
// and the words the log gives.
type refusal struct{ label, words string }

// The reasons a connection is refused.
var (
	refusedPlaintext  = refusal{"plaintext", "spoke plaintext to the mutual-TLS cluster port"}
	refusedTimeout    = refusal{"timeout", "did not complete the TLS handshake in time"}
	refusedNoCert     = refusal{"no_certificate", "presented no certificate"}
	refusedUnknownCA  = refusal{"unknown_ca", "presented a certificate another CA signed"}
	refusedExpired    = refusal{"expired", "presented a certificate that has expired or is not valid yet"}
	refusedClientCert = refusal{"client_certificate", "presented a client certificate, not a node certificate"}
	refusedBadCert    = refusal{"bad_certificate", "presented a certificate that failed verification"}
	refusedByPeer     = refusal{"peer_refused", "broke off the TLS handshake: it does not accept this node's certificate (does it trust another CA?)"}
	refusedHandshake  = refusal{"handshake", "failed the TLS handshake"}
	refusedNetwork    = refusal{"network", "failed on the network before it was handed over"}
	refusals          = []refusal{refusedPlaintext, refusedTimeout, refusedNoCert, refusedUnknownCA, refusedExpired,
		refusedClientCert, refusedBadCert, refusedByPeer, refusedHandshake, refusedNetwork}
)

// noCertificate is crypto/tls's error for a client that sent no
// certificate where one is required; it has no error type of its own.
const noCertificate = "didn't provide a certificate"

// refusalOf tells why a connection failed before it was handed over.
func refusalOf(err error) refusal {
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return refusedPlaintext
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return refusedTimeout
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "remote error" { // the peer's TLS alert
		return refusedByPeer
	}
	if strings.Contains(err.Error(), noCertificate) {
		return refusedNoCert
	}
	return certificateRefusal(err)
}

// certificateRefusal tells which check a peer's certificate failed.
func certificateRefusal(err error) refusal {
	if errors.Is(err, tlsutil.ErrNotNodeCert) {
		return refusedClientCert
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return refusedUnknownCA
	}
	if ce, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		if ce.Reason == x509.Expired {
			return refusedExpired
		}
		return refusedBadCert
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return refusedNetwork
	}
	return refusedHandshake
}

// newRefusedCounter is the cluster port's refusal counter, every reason
// at zero.
func newRefusedCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftcat_cluster_connections_refused_total",
		Help: "Connections the cluster (raft) port refused before handing them over, by reason: plaintext, timeout, no_certificate, unknown_ca, expired, client_certificate, bad_certificate, peer_refused (the peer broke off the handshake: it does not accept this node's certificate), handshake, network."},
		[]string{"reason"})
	for _, r := range refusals {
		c.WithLabelValues(r.label)
	}
	return c
}

// refusalLogWindow is how often at most a refusal from one remote is
// logged; the ones in between are counted into the next line, so a
// scanner cannot flood the log.
const refusalLogWindow = 10 * time.Second

// maxThrottled bounds the remotes refusalLog remembers; past it, refusals
// from remotes it does not know are not logged (the counter has them).
const maxThrottled = 4096

// refusalLog throttles refusal warnings per remote.
type refusalLog struct {
	window  time.Duration
	now     func() time.Time
	mu      sync.Mutex
	remotes map[string]*throttled
}

type throttled struct {
	logged     time.Time
	suppressed int
}

func newRefusalLog(window time.Duration, now func() time.Time) *refusalLog {
	return &refusalLog{window: window, now: now, remotes: map[string]*throttled{}}
}

// admit reports whether a refusal from remote is logged now, and how
// many from it were not since its last logged one.
func (l *refusalLog) admit(remote string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	r, ok := l.remotes[remote]
	if !ok && !l.room(now) {
		return false, 0
	}
	if ok && now.Sub(r.logged) < l.window {
		r.suppressed++
		return false, 0
	}
	suppressed := 0
	if ok {
		suppressed = r.suppressed
	}
	l.remotes[remote] = &throttled{logged: now}
	return true, suppressed
}

// room makes room for one more remote, forgetting those whose window
// has passed; it reports whether there is room.
func (l *refusalLog) room(now time.Time) bool {
	if len(l.remotes) < maxThrottled {
		return true
	}
	for k, r := range l.remotes {
		if now.Sub(r.logged) >= l.window {
			delete(l.remotes, k)
		}
	}
	return len(l.remotes) < maxThrottled
}
