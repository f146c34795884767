package fsm_test

import (
	"slices"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// gossipPool are the keys the gossip keyring commands draw from: more
// than a keyring holds, of every size.
var gossipPool = func() []string {
	var keys []string
	for i := range fsm.MaxGossipKeys + 4 {
		keys = append(keys, gossipKey(byte(i+1), []int{16, 24, 32}[i%3]))
	}
	return keys
}()

// gossipKeyCmd installs, uses or removes a key of the pool, most often one
// the keyring holds. While the state has no keyring, and now and then
// after, the command carries the leader's keyring (sometimes none, or one
// with a malformed key). A steady share is refused: a malformed key or
// operation, a use or removal of a key not installed, a removal of the
// primary. Its stamp leaves the clock be, as the auth generator's does.
func (g *logGen) gossipKeyCmd() {
	g.gossipEntries++
	st := fsm.Stamp{Time: g.clock, Caller: owner}
	if g.rules {
		st.Rules = fsm.CurrentRules
	}
	ops := []string{fsm.GossipKeyInstall, fsm.GossipKeyUse, fsm.GossipKeyRemove}
	c := &fsm.ChangeGossipKey{Stamp: st, Op: ops[g.grng.IntN(3)], Key: g.gossipPoolKey()}
	switch r := g.grng.IntN(100); {
	case r < 6:
		c.Key = c.Key[:10]
	case r < 9:
		c.Op = "rotate"
	}
	if g.driver.State().GossipKeyring() == nil || g.grng.IntN(10) == 0 {
		c.Current = g.leaderKeyring()
	}
	g.emit(c)
}

// gossipPoolKey is a key the keyring holds, or any of the pool.
func (g *logGen) gossipPoolKey() string {
	if k := g.driver.State().GossipKeyring(); k != nil && g.grng.IntN(100) < 60 {
		return k.Keys[g.grng.IntN(len(k.Keys))]
	}
	return gossipPool[g.grng.IntN(len(gossipPool))]
}

// leaderKeyring is a leader's keyring: one to three keys of the pool,
// sometimes with a malformed one, sometimes none (encryption off).
func (g *logGen) leaderKeyring() []string {
	if g.grng.IntN(8) == 0 {
		return nil
	}
	var keys []string
	for range 1 + g.grng.IntN(3) {
		keys = append(keys, gossipPool[g.grng.IntN(len(gossipPool))])
	}
	if g.grng.IntN(10) == 0 {
		keys = append(keys, "not base64!")
	}
	return keys
}

// sameGossipKeyring checks that two states hold the same keyring.
func sameGossipKeyring(t testing.TB, a, b *fsm.State) {
	t.Helper()
	if ja, jb := jsonOf(t, a.GossipKeyring()), jsonOf(t, b.GossipKeyring()); ja != jb {
		t.Fatalf("gossip keyrings differ:\n%s\n%s", ja, jb)
	}
}

// checkGossipKeyVariety fails unless every operation applied at least
// once, three kinds of command (an operation, or an unknown one) were
// refused, some changed nothing, and the keyring holds its primary.
func checkGossipKeyVariety(t testing.TB, g *logGen) {
	t.Helper()
	ok, noop, refused := map[string]int{}, 0, map[string]int{}
	for i, b := range g.log {
		if fsm.CommandType(b[0]) != fsm.CmdChangeGossipKey {
			continue
		}
		cmd, err := fsm.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		op := cmd.(*fsm.ChangeGossipKey).Op
		switch r := g.results[i]; {
		case r.Err != nil:
			refused[op]++
		case r.NoOp:
			noop++
		default:
			ok[op]++
		}
	}
	t.Logf("gossip keys: applied %v, no-op %d, refused %v", ok, noop, refused)
	for _, op := range []string{fsm.GossipKeyInstall, fsm.GossipKeyUse, fsm.GossipKeyRemove} {
		if ok[op] == 0 {
			t.Fatalf("the log has no applied gossip key %s", op)
		}
	}
	if noop == 0 || len(refused) < 3 {
		t.Fatal("the log has no gossip key command that changed nothing, or too few kinds refused")
	}
	if k := g.driver.State().GossipKeyring(); k == nil || !slices.Contains(k.Keys, k.Primary) {
		t.Fatalf("keyring %+v", k)
	}
}
