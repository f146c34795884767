package fsm_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// authCmd emits one principal, token, grant or signing key command:
// principals (users and services, some over a taken name or client id,
// some malformed, and the admin bootstrap every node proposes), their
// deletion (some of the last admin), tokens (some for a missing
// principal, over a taken id or already expired) and their revocation,
// grants on every kind of securable (some missing, some of privileges the
// type does not take) and signing key rotations. A steady share of
// commands is refused.
func (g *logGen) authCmd() {
	switch r := g.apick(100); {
	case r < 20:
		g.aemit(g.createPrincipalCmd())
	case r < 28:
		g.aemit(&fsm.DeletePrincipal{Stamp: g.astamp(), Name: g.principalRef()})
	case r < 44:
		g.aemit(g.createAuthTokenCmd())
	case r < 54:
		id := "missing"
		if len(g.tokenIDs) > 0 && !g.achance(8) {
			id = g.tokenIDs[g.apick(len(g.tokenIDs))]
		}
		g.aemit(&fsm.RevokeAuthToken{Stamp: g.astamp(), ID: id})
	case r < 90:
		g.aemit(g.updatePermissionsCmd())
	default:
		g.aemit(g.authSigningKeyCmd())
	}
}

// The auth generator draws from arng and numbers its ids itself, and its
// stamps leave the clock as they found it, so that the commands the other
// generators draw stay exactly what they were.

func (g *logGen) apick(n int) int { return g.arng.IntN(n) }

func (g *logGen) achance(pct int) bool { return g.arng.IntN(100) < pct }

func (g *logGen) aname(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, g.apick(n)) }

// aid is id numbered apart from the other generators' ids.
func (g *logGen) aid(prefix string) string {
	g.authIDs++
	return fmt.Sprintf("%s-a%05d", prefix, g.authIDs)
}

// astamp is a stamp up to two seconds on from the clock, or a little
// behind it; the clock stays where it is.
func (g *logGen) astamp() fsm.Stamp {
	st := fsm.Stamp{Time: g.clock + int64(g.apick(2000)) - 200, Caller: owner}
	if g.rules {
		st.Rules = fsm.CurrentRules
	}
	return st
}

// aemit emits an auth command and notes the securable it named.
func (g *logGen) aemit(cmd fsm.Command) {
	g.authEntries++
	g.emit(cmd)
	if r := g.results[len(g.results)-1]; r.Grants != nil && !slices.Contains(g.grantKeys, r.Grants.Securable) {
		g.grantKeys = append(g.grantKeys, r.Grants.Securable)
	}
}

func (g *logGen) secretHash() fsm.SecretHash {
	return fsm.SecretHash{Salt: g.aid("salt"), Hash: g.aid("hash")}
}

// newToken is a token of a new id, mostly without expiry, sometimes one
// expiring soon or already expired.
func (g *logGen) newToken(principal, prefix string) *fsm.AuthToken {
	k := &fsm.AuthToken{ID: g.aid(prefix), Principal: principal, Secret: g.secretHash()}
	if g.achance(30) {
		k.ExpiresAt = g.clock + int64(g.apick(30000)) - 3000
	}
	g.tokenIDs = append(g.tokenIDs, k.ID)
	return k
}

// createPrincipalCmd is the admin bootstrap, or a user or a service, now
// and then malformed, with or without a first token.
func (g *logGen) createPrincipalCmd() *fsm.CreatePrincipal {
	if g.achance(30) {
		return &fsm.CreatePrincipal{Stamp: g.astamp(), IfNoAdmin: true,
			Principal: fsm.Principal{Name: fsm.AdminPrincipal, Type: fsm.PrincipalUser, Admin: true},
			Token:     g.newToken("", "opaque")}
	}
	p := fsm.Principal{Name: g.aname("u", 6), Type: fsm.PrincipalUser, Admin: g.achance(8)}
	if g.achance(35) {
		secret := g.secretHash()
		p = fsm.Principal{Name: g.aname("svc", 3), Type: fsm.PrincipalService, ClientID: g.aname("cid", 4), Secret: &secret}
	}
	if g.achance(10) {
		switch g.apick(4) {
		case 0:
			p.Name = "a/" + p.Name
		case 1:
			p.Type = "group"
		case 2:
			p.ClientID = g.aname("cid", 4)
			p.Secret = nil
		default:
			p.ClientID = ""
		}
	}
	c := &fsm.CreatePrincipal{Stamp: g.astamp(), Principal: p}
	if g.achance(30) {
		c.Token = g.newToken("", "tok")
	}
	return c
}

// principalRef is a principal of the state most of the time, else one
// missing.
func (g *logGen) principalRef() string {
	ps := g.driver.State().Principals("", 0)
	if len(ps) == 0 || g.achance(10) {
		return g.aname("u", 8)
	}
	return ps[g.apick(len(ps))].Name
}

// createAuthTokenCmd is a token of a principal, sometimes of a missing
// one, over an id in use or without its hash.
func (g *logGen) createAuthTokenCmd() *fsm.CreateAuthToken {
	k := g.newToken(g.principalRef(), "tok")
	switch {
	case g.achance(8) && len(g.tokenIDs) > 1:
		k.ID = g.tokenIDs[g.apick(len(g.tokenIDs)-1)]
	case g.achance(4):
		k.Secret.Hash = ""
	}
	return &fsm.CreateAuthToken{Stamp: g.astamp(), Token: *k}
}

// securableRef is a securable of the state and its type: the metastore, a
// catalog, a schema or a namespace below one, or a table; now and then a
// missing one.
func (g *logGen) securableRef() (string, []string) {
	st := g.driver.State()
	switch r := g.apick(100); {
	case r < 12:
		return fsm.SecurableMetastore, nil
	case r < 32:
		cs := st.Catalogs("", 0)
		if len(cs) == 0 || g.achance(8) {
			return fsm.SecurableCatalog, []string{g.aname("c", 6)}
		}
		return fsm.SecurableCatalog, []string{cs[g.apick(len(cs))].Name}
	case r < 60:
		ss := g.schemas()
		if len(ss) == 0 || g.achance(8) {
			return fsm.SecurableSchema, []string{g.aname("c", 5), g.aname("s", 5)}
		}
		s := ss[g.apick(len(ss))]
		path := []string{s.CatalogName, s.Name}
		if ns := st.Namespaces(path, "", 0); len(ns) > 0 && g.achance(40) {
			return fsm.SecurableSchema, slices.Clone(ns[g.apick(len(ns))].Path)
		}
		return fsm.SecurableSchema, path
	}
	ts := g.icebergKind(func(*fsm.Table) bool { return true })
	if len(ts) == 0 || g.achance(8) {
		return fsm.SecurableTable, []string{"unity", "default", g.aname("t", 8)}
	}
	tb := ts[g.apick(len(ts))]
	return fsm.SecurableTable, append(slices.Clone(tb.NamespacePath()), tb.Name)
}

// updatePermissionsCmd adds or removes privileges of one or two
// principals (existing or not: a grant does not need its principal) on a
// securable, now and then a privilege its type does not take.
func (g *logGen) updatePermissionsCmd() *fsm.UpdatePermissions {
	typ, path := g.securableRef()
	c := &fsm.UpdatePermissions{Stamp: g.astamp(), SecurableType: typ, Path: path}
	privs := fsm.Grantable(typ)
	for range 1 + g.apick(2) {
		ch := fsm.PermissionChange{Principal: g.aname("u", 6)}
		if g.achance(30) {
			ch.Principal = g.principalRef()
		}
		var ps []string
		for range 1 + g.apick(2) {
			ps = append(ps, privs[g.apick(len(privs))])
		}
		if g.achance(6) {
			ps = append(ps, []string{fsm.PrivSelect, fsm.PrivUseCatalog, fsm.PrivCreateCatalog}[g.apick(3)])
		}
		if g.achance(65) {
			ch.Add = ps
		} else {
			ch.Remove = ps
		}
		c.Changes = append(c.Changes, ch)
	}
	return c
}

// authSigningKeyCmd rotates the token signing key with a grace of up to
// five seconds, sometimes only if there is none, sometimes with a key too
// short, a negative grace or an id in use.
func (g *logGen) authSigningKeyCmd() *fsm.SetAuthSigningKey {
	key := make([]byte, 32+g.apick(2)*8)
	for i := range key {
		key[i] = byte(g.arng.Uint32())
	}
	c := &fsm.SetAuthSigningKey{Stamp: g.astamp(), ID: g.aid("key"), Key: base64.StdEncoding.EncodeToString(key),
		GraceMs: int64(g.apick(5000)), IfAbsent: g.achance(25)}
	switch ks := g.driver.State().AuthSigningKeys(); {
	case g.achance(6):
		c.Key = c.Key[:20]
	case g.achance(5):
		c.GraceMs = -1
	case len(ks) > 0 && g.achance(6):
		c.ID = ks[g.apick(len(ks))].ID
	}
	return c
}

// sameAuthAnswers checks that two states answer every principal, token,
// grant and signing key lookup identically.
func sameAuthAnswers(t testing.TB, a, b *fsm.State, g *logGen) {
	t.Helper()
	eq := func(what string, x, y any) {
		t.Helper()
		if jx, jy := jsonOf(t, x), jsonOf(t, y); jx != jy {
			t.Fatalf("%s differs:\n%s\n%s", what, jx, jy)
		}
	}
	eq("principals", a.Principals("", 0), b.Principals("", 0))
	eq("principal page", a.Principals("svc0", 2), b.Principals("svc0", 2))
	eq("has admin", a.HasAdmin(), b.HasAdmin())
	for i := range 4 {
		id := fmt.Sprintf("cid%d", i)
		pa, oka := a.PrincipalByClientID(id)
		pb, okb := b.PrincipalByClientID(id)
		eq("client "+id, []any{pa, oka}, []any{pb, okb})
	}
	for _, id := range g.tokenIDs {
		ka, oka := a.AuthToken(id)
		kb, okb := b.AuthToken(id)
		eq("token "+id, []any{ka, oka}, []any{kb, okb})
	}
	eq("opaque tokens", a.OpaqueTokens(), b.OpaqueTokens())
	eq("metastore key", a.MetastoreKey(), b.MetastoreKey())
	for _, key := range g.grantKeys {
		eq("grants on "+key, a.Grants(key), b.Grants(key))
	}
	eq("signing keys", a.AuthSigningKeys(), b.AuthSigningKeys())
}

// checkAuthRecords checks what the principal commands keep consistent: a
// token's principal exists, the client id index names the services that
// hold the ids, and no one holds an empty assignment.
func checkAuthRecords(t testing.TB, st *fsm.State, g *logGen) {
	t.Helper()
	for _, id := range g.tokenIDs {
		if k, ok := st.AuthToken(id); ok {
			if _, ok := st.Principal(k.Principal); !ok {
				t.Fatalf("token %s outlived its principal %s", id, k.Principal)
			}
		}
	}
	clients := 0
	for _, p := range st.Principals("", 0) {
		if p.ClientID == "" {
			continue
		}
		clients++
		if q, ok := st.PrincipalByClientID(p.ClientID); !ok || q.Name != p.Name {
			t.Fatalf("client id %s of %s finds %+v", p.ClientID, p.Name, q)
		}
	}
	for i := range 4 {
		if p, ok := st.PrincipalByClientID(fmt.Sprintf("cid%d", i)); ok && p.ClientID != fmt.Sprintf("cid%d", i) {
			t.Fatalf("client id cid%d finds %+v", i, p)
		}
	}
	for _, key := range g.grantKeys {
		as := st.Grants(key)
		if !slices.IsSortedFunc(as, func(a, b fsm.PrivilegeAssignment) int { return strings.Compare(a.Principal, b.Principal) }) {
			t.Fatalf("grants on %s not sorted: %+v", key, as)
		}
		for _, a := range as {
			if len(a.Privileges) == 0 || !slices.IsSorted(a.Privileges) || len(slices.Compact(slices.Clone(a.Privileges))) != len(a.Privileges) {
				t.Fatalf("grants on %s: %+v", key, a)
			}
		}
	}
}

// authVariety counts, per principal, token, grant and key command type,
// the entries of the log that applied, were no-ops and were refused.
func authVariety(log [][]byte, results []fsm.Result) (ok, noop, refused map[fsm.CommandType]int) {
	ok, noop, refused = map[fsm.CommandType]int{}, map[fsm.CommandType]int{}, map[fsm.CommandType]int{}
	for i, b := range log {
		ct := fsm.CommandType(b[0])
		if ct < fsm.CmdCreatePrincipal || ct > fsm.CmdSetAuthSigningKey {
			continue
		}
		switch r := results[i]; {
		case r.Err != nil:
			refused[ct]++
		case r.NoOp:
			noop[ct]++
		default:
			ok[ct]++
		}
	}
	return ok, noop, refused
}

// checkAuthVariety fails unless every principal, token, grant and key
// command applied at least once and at least three were refused at least
// once, a second bootstrap and a grant changing nothing were no-ops, and
// the driver's records are consistent.
func checkAuthVariety(t testing.TB, g *logGen) {
	t.Helper()
	ok, noop, refused := authVariety(g.log, g.results)
	t.Logf("auth: applied %v, no-op %v, refused %v; %d principals, %d securables granted on",
		ok, noop, refused, len(g.driver.State().Principals("", 0)), len(g.grantKeys))
	nRefused := 0
	for ct := fsm.CmdCreatePrincipal; ct <= fsm.CmdSetAuthSigningKey; ct++ {
		if ok[ct] == 0 {
			t.Fatalf("the log has no applied %v", ct)
		}
		if refused[ct] > 0 {
			nRefused++
		}
	}
	if nRefused < 3 {
		t.Fatalf("only %d auth command types were ever refused", nRefused)
	}
	if noop[fsm.CmdCreatePrincipal] == 0 || noop[fsm.CmdUpdatePermissions] == 0 {
		t.Fatal("the log has no repeated bootstrap or grant that changed nothing")
	}
	checkAuthRecords(t, g.driver.State(), g)
}
