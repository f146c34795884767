package httpapi

import (
	"context"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/auth"
)

// bootstrapEvery is how often a node checks whether the cluster still
// needs its admin or its first token signing key.
const bootstrapEvery = 200 * time.Millisecond

// StartBootstrap makes sure, whenever this node leads, that the cluster
// has its metastore admin (whose token is adminToken, the operator's
// admin token file) and a key to sign OAuth2 access tokens with. Every
// node runs it; the commands are no-ops once applied, so racing leaders
// agree. It returns a function that stops it.
func (s *Server) StartBootstrap(adminToken string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(bootstrapEvery)
		defer t.Stop()
		for !s.bootstrapOnce(ctx, adminToken) {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// bootstrapOnce proposes what the cluster lacks, if this node leads; it
// reports whether nothing is lacking any more.
func (s *Server) bootstrapOnce(ctx context.Context, adminToken string) bool {
	st, _ := s.cluster.StaleState()
	hasAdmin, hasKey := st.HasAdmin(), len(st.AuthSigningKeys()) > 0
	if (hasAdmin || adminToken == "") && hasKey {
		return true
	}
	if !s.cluster.IsLeader() || !s.cluster.Ready() || !s.rulesAllow(fsm.RulesAuth) {
		return false
	}
	now := fsm.Stamp{Time: time.Now().UnixMilli()}
	if !hasAdmin && adminToken != "" {
		cmd := auth.BootstrapAdmin(adminToken)
		cmd.Stamp = now
		s.proposeBootstrap(ctx, cmd, "the metastore admin")
	}
	if !hasKey {
		cmd := auth.NewSigningKey(0, true)
		cmd.Stamp = now
		s.proposeBootstrap(ctx, cmd, "the first token signing key")
	}
	return false
}

func (s *Server) proposeBootstrap(ctx context.Context, cmd fsm.Command, what string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, _, err := s.cluster.Propose(ctx, cmd)
	switch {
	case err != nil:
		s.log.Warn("could not create "+what+"; will try again", "err", err)
	case res.Err != nil:
		s.log.Error("could not create "+what, "err", res.Err)
	case !res.NoOp:
		s.log.Info("created " + what)
	}
}

// rulesAllow reports whether every node knows the rules level (for data
// paths that tell; those that do not are taken to know it).
func (s *Server) rulesAllow(level uint16) bool {
	r, ok := s.cluster.(interface{ Rules() uint16 })
	return !ok || r.Rules() >= level
}
