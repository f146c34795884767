package admin

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// The gossip keyring: GET /v1/cluster/gossip-keys lists the keys by
// fingerprint, with how many alive nodes have each installed and encrypt
// with it; POST changes the replicated keyring one step of a rotation at
// a time ({"op": "install"|"use"|"remove", "key": base64}) and answers
// the listing. A key is never answered, logged or audited.

type gossipKeyReq struct {
	Op  string `json:"op"`
	Key string `json:"key"`
}

// listGossipKeys answers the listing as the leader sees it.
func (s *Server) listGossipKeys(c echo.Context) error {
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.ops.GossipKeys(st))
}

// buildGossipKey checks a key change on the leader and carries its own
// keyring, which seeds the replicated one on the first change.
func (s *Server) buildGossipKey(in *httpapi.In[gossipKeyReq]) (*fsm.ChangeGossipKey, error) {
	ops := []string{fsm.GossipKeyInstall, fsm.GossipKeyUse, fsm.GossipKeyRemove}
	if !slices.Contains(ops, in.Body.Op) {
		return nil, httpapi.Invalid("op must be %q, %q or %q.", fsm.GossipKeyInstall, fsm.GossipKeyUse, fsm.GossipKeyRemove)
	}
	if in.Body.Key == "" {
		return nil, httpapi.Invalid("key is required.")
	}
	raw, ok := fsm.GossipKeyBytes(in.Body.Key)
	if !ok {
		return nil, httpapi.Invalid("key must be the standard base64 of a 16, 24 or 32-byte key (`raftcat gossip keygen` prints one).")
	}
	current := s.ops.GossipKeyring()
	if len(current) == 0 {
		return nil, echo.NewHTTPError(http.StatusConflict,
			"Gossip encryption is off: the nodes run without --gossip-key-file, so there is no gossip keyring to change.")
	}
	if err := s.checkRotationStep(in.Body.Op, clusterapi.KeyFingerprint(raw)); err != nil {
		return nil, err
	}
	return &fsm.ChangeGossipKey{Stamp: in.Stamp, Op: in.Body.Op, Key: in.Body.Key, Current: current}, nil
}

// checkRotationStep refuses a step that would cut alive nodes off gossip:
// using a key some alive node has not installed yet (it could not read
// the others' messages), removing one some alive node still encrypts
// with (the others could not read its messages). A node applies a change
// shortly after the leader does; the listing shows when all have. A key
// no node holds is the state machine's to refuse.
func (s *Server) checkRotationStep(op, fingerprint string) error {
	st, _ := s.cluster.StaleState()
	keys := s.ops.GossipKeys(st).Keys
	i := slices.IndexFunc(keys, func(k clusterapi.GossipKey) bool { return k.Fingerprint == fingerprint })
	if i < 0 {
		return nil
	}
	switch k := keys[i]; {
	case op == fsm.GossipKeyUse && k.Installed < k.Alive:
		return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Gossip key %s is installed on %d of %d alive nodes; "+
			"use it once every node has it (GET /v1/cluster/gossip-keys).", fingerprint, k.Installed, k.Alive))
	case op == fsm.GossipKeyRemove && k.Primary > 0:
		return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Gossip key %s is the primary key of %d of %d alive nodes; "+
			"remove it once no node encrypts with it (GET /v1/cluster/gossip-keys).", fingerprint, k.Primary, k.Alive))
	}
	return nil
}

// gossipKeysAnswer answers the listing after a change, from the state
// the leader applied it to.
func (s *Server) gossipKeysAnswer(c echo.Context, _ fsm.Result) error {
	st, _ := s.cluster.StaleState()
	return c.JSON(http.StatusOK, s.ops.GossipKeys(st))
}
