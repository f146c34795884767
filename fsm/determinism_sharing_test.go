package fsm_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// sharingCmd emits one Delta Sharing command: shares and their objects,
// grants, recipients and their tokens, and the URL signing key. Names
// come in varying case, and a steady share of commands is refused.
func (g *logGen) sharingCmd() {
	switch r := g.spick(100); {
	case r < 10:
		g.semit(&fsm.CreateShare{Stamp: g.sstamp(), ID: g.id("share"), Name: g.foldName("sh", 4), Comment: ptr(g.id("c"))})
	case r < 32:
		name := g.shareName()
		g.semit(&fsm.UpdateShare{Stamp: g.sstamp(), Name: name, Updates: g.shareUpdates(name)})
	case r < 38:
		g.semit(&fsm.DeleteShare{Stamp: g.sstamp(), Name: g.shareName()})
	case r < 52:
		g.semit(&fsm.UpdateSharePermissions{Stamp: g.sstamp(), Share: g.shareName(), Changes: []fsm.PermissionChange{g.permissionChange()}})
	case r < 64:
		g.semit(&fsm.CreateRecipient{Stamp: g.sstamp(), ID: g.id("rcp"), Name: g.foldName("r", 4), TokenID: g.id("tok"),
			ActivationHash: g.activationHash(), ExpirationTime: g.expiration()})
	case r < 70:
		g.semit(&fsm.DeleteRecipient{Stamp: g.sstamp(), Name: g.recipientName()})
	case r < 80:
		g.semit(&fsm.RotateRecipientToken{Stamp: g.sstamp(), Name: g.recipientName(), ExistingTokenExpireInSeconds: int64(g.spick(4) - 1),
			TokenID: g.id("tok"), ActivationHash: g.activationHash(), ExpirationTime: g.expiration()})
	case r < 92:
		g.activateCmd()
	default:
		g.signingKeyCmd()
	}
}

// permissionChange grants SELECT, or revokes it, or asks for another
// privilege.
func (g *logGen) permissionChange() fsm.PermissionChange {
	ch := fsm.PermissionChange{Principal: g.recipientName()}
	switch r := g.spick(100); {
	case r < 65:
		ch.Add = []string{"select"}
	case r < 95:
		ch.Remove = []string{"SELECT"}
	default:
		ch.Add = []string{"MODIFY"}
	}
	return ch
}

// signingKeyCmd sets a key of 32 or 40 bytes, sometimes only if absent,
// sometimes a key too short.
func (g *logGen) signingKeyCmd() {
	key := make([]byte, 32+g.spick(2)*8)
	for i := range key {
		key[i] = byte(g.srng.Uint32())
	}
	enc := base64.StdEncoding.EncodeToString(key)
	if g.schance(10) {
		enc = enc[:20]
	}
	g.semit(&fsm.SetURLSigningKey{Stamp: g.sstamp(), Key: enc, IfAbsent: g.schance(60)})
}

// The sharing generator draws from srng only, so that the commands the
// other generators draw stay what they were.

func (g *logGen) spick(n int) int { return g.srng.IntN(n) }

func (g *logGen) schance(pct int) bool { return g.srng.IntN(100) < pct }

func (g *logGen) sname(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, g.spick(n)) }

// sstamp is stamp drawn from srng.
func (g *logGen) sstamp() fsm.Stamp {
	g.clock += int64(g.spick(2000)) - 200
	st := fsm.Stamp{Time: g.clock, Caller: owner}
	if g.rules {
		st.Rules = fsm.CurrentRules
	}
	return st
}

// semit emits a sharing command.
func (g *logGen) semit(cmd fsm.Command) {
	g.sharingEntries++
	g.emit(cmd)
}

// stable is a table of a schema, or nil.
func (g *logGen) stable() *fsm.Table {
	ts := g.tables()
	if len(ts) == 0 {
		return nil
	}
	return ts[g.spick(len(ts))]
}

// foldName is a name of n, in upper or lower case.
func (g *logGen) foldName(prefix string, n int) string {
	name := g.sname(prefix, n)
	if g.schance(30) {
		return strings.ToUpper(name)
	}
	return name
}

func (g *logGen) shareName() string {
	ss := g.driver.State().Shares("", 0)
	if len(ss) == 0 || g.schance(8) {
		return g.foldName("sh", 4)
	}
	return ss[g.spick(len(ss))].Name
}

func (g *logGen) recipientName() string {
	rs := g.driver.State().Recipients("", 0)
	if len(rs) == 0 || g.schance(8) {
		return g.foldName("r", 4)
	}
	name := rs[g.spick(len(rs))].Name
	if g.schance(20) {
		return strings.ToUpper(name)
	}
	return name
}

// activationHash is a new hash, sometimes one already taken.
func (g *logGen) activationHash() string {
	if len(g.activations) > 0 && g.schance(5) {
		return g.activations[g.spick(len(g.activations))]
	}
	h := g.id("act")
	g.activations = append(g.activations, h)
	return h
}

// expiration is mostly never, sometimes soon, sometimes in the past.
func (g *logGen) expiration() int64 {
	if g.schance(60) {
		return 0
	}
	return g.clock + int64(g.spick(30000)) - 2000
}

// activateCmd activates a token waiting for it, sometimes one already
// activated or an unknown one, sometimes with a bearer hash in use.
func (g *logGen) activateCmd() {
	var waiting []string
	for _, r := range g.driver.State().Recipients("", 0) {
		for _, k := range r.Tokens {
			if k.BearerHash == "" {
				waiting = append(waiting, k.ActivationHash)
			}
		}
	}
	act := "unknown"
	switch {
	case len(waiting) > 0 && g.schance(75):
		act = waiting[g.spick(len(waiting))]
	case len(g.activations) > 0 && g.schance(90):
		act = g.activations[g.spick(len(g.activations))]
	}
	bearer := g.id("bearer")
	if len(g.bearers) > 0 && g.schance(5) {
		bearer = g.bearers[0]
	}
	g.bearers = append(g.bearers, bearer)
	g.semit(&fsm.ActivateRecipientToken{Stamp: g.sstamp(), ActivationHash: act, BearerHash: bearer})
}

// shareUpdates is one to three updates of a share's objects: adds of
// tables (some missing, some shared already, some not Delta), removes and
// updates of its objects (some not in it).
func (g *logGen) shareUpdates(share string) []fsm.ShareUpdate {
	var objects []fsm.SharedObject
	if s, ok := g.driver.State().Share(share); ok {
		objects = s.Objects
	}
	var out []fsm.ShareUpdate
	for range 1 + g.spick(3) {
		out = append(out, g.shareUpdate(objects))
	}
	return out
}

func (g *logGen) shareUpdate(objects []fsm.SharedObject) fsm.ShareUpdate {
	u := fsm.ShareUpdate{Action: fsm.ShareActionAdd}
	r, tb := g.spick(10), g.stable()
	if len(objects) == 0 && r >= 7 {
		r = 6
	}
	switch {
	case r < 6 && tb != nil:
		u.Object.Name = tb.FullName()
		if g.schance(30) {
			u.Object.SharedAs = g.sname("x", 2) + "." + g.sname("y", 3)
		}
		if g.schance(30) {
			u.Object.HistoryDataSharingStatus = fsm.HistoryEnabled
		}
	case r < 7:
		u.Object.Name = "unity.default.missing"
	case r < 9:
		u.Action = fsm.ShareActionRemove
		u.Object.Name = strings.ToUpper(objects[g.spick(len(objects))].Name)
	default:
		u.Action = "update"
		u.Object.SharedAs = objects[g.spick(len(objects))].SharedAs
		u.Object.StartVersion = int64(g.spick(5))
		u.Object.Comment = ptr(g.id("c"))
	}
	return u
}

// sameSharingAnswers checks that two states answer every sharing lookup
// identically, the hash indexes included.
func sameSharingAnswers(t testing.TB, a, b *fsm.State, g *logGen) {
	t.Helper()
	eq := func(what string, x, y any) {
		t.Helper()
		if jx, jy := jsonOf(t, x), jsonOf(t, y); jx != jy {
			t.Fatalf("%s differs:\n%s\n%s", what, jx, jy)
		}
	}
	eq("shares", a.Shares("", 0), b.Shares("", 0))
	eq("share page", a.Shares("SH1", 2), b.Shares("SH1", 2))
	eq("recipients", a.Recipients("", 0), b.Recipients("", 0))
	for _, r := range a.Recipients("", 0) {
		eq("shares granted to "+r.Name, a.SharesGrantedTo(r.Name), b.SharesGrantedTo(r.Name))
	}
	ka, oka := a.URLSigningKey()
	kb, okb := b.URLSigningKey()
	eq("signing key", []any{ka, oka}, []any{kb, okb})
	for _, h := range g.activations {
		ra, ta, oka := a.RecipientByActivation(h)
		rb, tb, okb := b.RecipientByActivation(h)
		eq("activation "+h, []any{ra, ta, oka}, []any{rb, tb, okb})
	}
	for _, h := range g.bearers {
		ra, ta, oka := a.RecipientByBearer(h)
		rb, tb, okb := b.RecipientByBearer(h)
		eq("bearer "+h, []any{ra, ta, oka}, []any{rb, tb, okb})
	}
}

// sharingVariety counts, per sharing command type, the entries of the log
// that applied (changing the state) and those refused.
func sharingVariety(log [][]byte, results []fsm.Result) (ok, refused map[fsm.CommandType]int) {
	ok, refused = map[fsm.CommandType]int{}, map[fsm.CommandType]int{}
	for i, b := range log {
		ct := fsm.CommandType(b[0])
		if ct < fsm.CmdCreateShare || ct > fsm.CmdSetURLSigningKey {
			continue
		}
		switch r := results[i]; {
		case r.Err != nil:
			refused[ct]++
		case !r.NoOp:
			ok[ct]++
		}
	}
	return ok, refused
}

// checkSharingVariety fails unless every sharing command applied at least
// once and most were refused at least once.
func checkSharingVariety(t testing.TB, g *logGen) {
	t.Helper()
	ok, refused := sharingVariety(g.log, g.results)
	t.Logf("sharing: applied %v, refused %v", ok, refused)
	nRefused := 0
	for ct := fsm.CmdCreateShare; ct <= fsm.CmdSetURLSigningKey; ct++ {
		if ok[ct] == 0 {
			t.Fatalf("the log has no applied %v", ct)
		}
		if refused[ct] > 0 {
			nRefused++
		}
	}
	if nRefused < 6 {
		t.Fatalf("only %d sharing command types were ever refused", nRefused)
	}
}
