package fsm_test

import (
	"bytes"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

// gossipKey is a valid key of n bytes, all b.
func gossipKey(b byte, n int) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n))
}

func (e *env) gossipCmd(op, key string, current ...string) *fsm.ChangeGossipKey {
	st := e.st()
	st.Rules = fsm.CurrentRules
	return &fsm.ChangeGossipKey{Stamp: st, Op: op, Key: key, Current: current}
}

// wantKeyring checks the state's keyring.
func wantKeyring(t *testing.T, st *fsm.State, primary string, keys ...string) {
	t.Helper()
	want := &fsm.GossipKeyring{Keys: keys, Primary: primary}
	if got := st.GossipKeyring(); !reflect.DeepEqual(got, want) {
		t.Fatalf("keyring = %+v, want %+v", got, want)
	}
}

// A rotation as an operator runs it: the first command seeds the keyring
// with the leader's own keys, the new key is installed, used, and the old
// one removed; repeating a step changes nothing.
func TestGossipKeyRotation(t *testing.T) {
	e := newEnv(t)
	old, next := gossipKey(1, 32), gossipKey(2, 16)
	if e.m.State().GossipKeyring() != nil {
		t.Fatal("a new state has a gossip keyring")
	}
	res := e.changed(e.gossipCmd(fsm.GossipKeyInstall, next, old))
	wantKeyring(t, e.m.State(), old, old, next)
	if res.GossipKeys != e.m.State().GossipKeyring() {
		t.Fatal("the result is not the state's keyring")
	}
	e.noop(e.gossipCmd(fsm.GossipKeyInstall, next, next)) // Current is ignored once seeded
	e.changed(e.gossipCmd(fsm.GossipKeyUse, next))
	wantKeyring(t, e.m.State(), next, old, next)
	e.noop(e.gossipCmd(fsm.GossipKeyUse, next))
	e.changed(e.gossipCmd(fsm.GossipKeyRemove, old))
	wantKeyring(t, e.m.State(), next, next)
	e.fail(e.gossipCmd(fsm.GossipKeyRemove, old), fsm.CodeInvalid, "not installed")
}

// Seeding: an install of the key the leader already holds still records
// the keyring; a leader without keys cannot seed one; the leader's keys
// are checked and de-duplicated, in the order given.
func TestGossipKeyringSeed(t *testing.T) {
	a, b := gossipKey(1, 32), gossipKey(2, 24)
	e := newEnv(t)
	e.fail(e.gossipCmd(fsm.GossipKeyInstall, a), fsm.CodeInvalid, "encryption is off")
	e.fail(e.gossipCmd(fsm.GossipKeyInstall, a, "bm90IGEga2V5"), fsm.CodeInvalid, "16, 24 or 32 bytes")
	e.changed(e.gossipCmd(fsm.GossipKeyInstall, a, a))
	wantKeyring(t, e.m.State(), a, a)

	e = newEnv(t)
	e.changed(e.gossipCmd(fsm.GossipKeyUse, a, b, a, b))
	wantKeyring(t, e.m.State(), a, b, a)

	e = newEnv(t)
	many := []string{}
	for i := range fsm.MaxGossipKeys + 1 {
		many = append(many, gossipKey(byte(i+1), 16))
	}
	e.fail(e.gossipCmd(fsm.GossipKeyInstall, a, many...), fsm.CodeInvalid, "at most")
}

// Refusals change nothing and never name a key.
func TestGossipKeyRefusals(t *testing.T) {
	e := newEnv(t)
	a, b, c := gossipKey(1, 32), gossipKey(2, 32), gossipKey(3, 32)
	e.changed(e.gossipCmd(fsm.GossipKeyInstall, b, a))
	url := base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))
	for _, tc := range []struct {
		cmd  *fsm.ChangeGossipKey
		want string
	}{
		{e.gossipCmd(fsm.GossipKeyInstall, ""), "16, 24 or 32 bytes"},
		{e.gossipCmd(fsm.GossipKeyInstall, gossipKey(4, 20)), "16, 24 or 32 bytes"},
		{e.gossipCmd(fsm.GossipKeyInstall, url), "16, 24 or 32 bytes"},
		{e.gossipCmd(fsm.GossipKeyInstall, c[:len(c)-1]), "16, 24 or 32 bytes"},
		{e.gossipCmd("rotate", c), "must be"},
		{e.gossipCmd(fsm.GossipKeyUse, c), "not installed"},
		{e.gossipCmd(fsm.GossipKeyRemove, c), "not installed"},
		{e.gossipCmd(fsm.GossipKeyRemove, a), "primary gossip key cannot be removed"},
	} {
		err := e.fail(tc.cmd, fsm.CodeInvalid, tc.want)
		for _, k := range []string{a, b, c, url} {
			if strings.Contains(err.Message, k) || strings.Contains(err.Message, k[:12]) {
				t.Fatalf("%q names a key", err.Message)
			}
		}
	}
	for i := 4; len(e.m.State().GossipKeyring().Keys) < fsm.MaxGossipKeys; i++ {
		e.changed(e.gossipCmd(fsm.GossipKeyInstall, gossipKey(byte(i), 16)))
	}
	e.fail(e.gossipCmd(fsm.GossipKeyInstall, c), fsm.CodeInvalid, "at most")
	e.noop(e.gossipCmd(fsm.GossipKeyInstall, b))
	if k := e.m.State().GossipKeyring(); k.Primary != a || len(k.Keys) != fsm.MaxGossipKeys {
		t.Fatalf("keyring = %+v", k)
	}
}

// The command needs every replica to know the rules level it came with.
func TestGossipKeyNeedsItsRules(t *testing.T) {
	if fsm.RulesNeeded(fsm.CmdChangeGossipKey) != fsm.RulesGossipKeys || fsm.CurrentRules < fsm.RulesGossipKeys {
		t.Fatalf("rules needed %d, current %d", fsm.RulesNeeded(fsm.CmdChangeGossipKey), fsm.CurrentRules)
	}
	if fsm.RulesNeeded(fsm.CmdSetAuthSigningKey) != fsm.RulesAuth {
		t.Fatal("the auth commands' level moved")
	}
	c := &fsm.ChangeGossipKey{Op: fsm.GossipKeyInstall, Key: gossipKey(1, 16), Current: []string{gossipKey(2, 16)}}
	c.Rules = fsm.CurrentRules
	b, err := fsm.EncodeChecked(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fsm.Decode(b)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	c.Rules = fsm.CurrentRules + 1
	if _, err := fsm.EncodeChecked(c); err == nil {
		t.Fatal("a command of an unknown rules level was accepted")
	}
}

// The keyring survives a snapshot: records, digest and bytes, and the
// restored state goes on refusing and applying as the original does.
func TestGossipKeyringSnapshotRoundTrip(t *testing.T) {
	e := newEnv(t)
	a, b := gossipKey(1, 32), gossipKey(2, 32)
	e.changed(e.gossipCmd(fsm.GossipKeyInstall, b, a))
	e.changed(e.gossipCmd(fsm.GossipKeyUse, b))
	st := e.m.State()
	data := writeState(t, st, e.lastIndex())
	restored, _, err := snapshot.ReadState(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if again := writeState(t, restored, e.lastIndex()); !bytes.Equal(again, data) || restored.Digest() != st.Digest() {
		t.Fatal("the restored state serialises differently")
	}
	wantKeyring(t, restored, b, a, b)
	r := &env{t: t, m: fsm.NewMachine(), next: e.next, clock: e.clock}
	r.m.Replace(restored)
	r.fail(r.gossipCmd(fsm.GossipKeyRemove, b), fsm.CodeInvalid, "primary")
	r.noop(r.gossipCmd(fsm.GossipKeyInstall, a))
	rm := r.gossipCmd(fsm.GossipKeyRemove, a)
	r.changed(rm)
	e.changed(rm)
	if e.m.State().Digest() != r.m.State().Digest() {
		t.Fatal("original and restored states diverged")
	}
	if bytes.Equal(writeState(t, st, 1), writeState(t, newEnv(t).m.State(), 1)) {
		t.Fatal("the keyring is not in the snapshot")
	}
}
