package fsm_test

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

func secretOf(s string) *fsm.SecretHash { return &fsm.SecretHash{Salt: "salt-" + s, Hash: "hash-" + s} }

func userNamed(name string) fsm.Principal { return fsm.Principal{Name: name, Type: fsm.PrincipalUser} }

func serviceNamed(name, clientID string) fsm.Principal {
	return fsm.Principal{Name: name, Type: fsm.PrincipalService, ClientID: clientID, Secret: secretOf(clientID)}
}

func (e *env) createPrincipal(p fsm.Principal) *fsm.Principal {
	e.t.Helper()
	return e.changed(&fsm.CreatePrincipal{Stamp: e.st(), Principal: p}).Principal
}

// bootstrap is the CreatePrincipal every node proposes at first start: the
// admin with the operator's token, if no admin exists yet.
func (e *env) bootstrap(tokenID string) *fsm.CreatePrincipal {
	return &fsm.CreatePrincipal{Stamp: e.st(), IfNoAdmin: true,
		Principal: fsm.Principal{Name: fsm.AdminPrincipal, Type: fsm.PrincipalUser, Admin: true},
		Token:     &fsm.AuthToken{ID: tokenID, Secret: *secretOf(tokenID)}}
}

func (e *env) authToken(principal, id string) *fsm.CreateAuthToken {
	return &fsm.CreateAuthToken{Stamp: e.st(), Token: fsm.AuthToken{ID: id, Principal: principal, Secret: *secretOf(id)}}
}

func (e *env) grant(typ string, path []string, changes ...fsm.PermissionChange) *fsm.UpdatePermissions {
	return &fsm.UpdatePermissions{Stamp: e.st(), SecurableType: typ, Path: path, Changes: changes}
}

func addPriv(principal string, privs ...string) fsm.PermissionChange {
	return fsm.PermissionChange{Principal: principal, Add: privs}
}

func removePriv(principal string, privs ...string) fsm.PermissionChange {
	return fsm.PermissionChange{Principal: principal, Remove: privs}
}

func (e *env) signingKeyCmd(id string, b byte, graceMs int64) *fsm.SetAuthSigningKey {
	return &fsm.SetAuthSigningKey{Stamp: e.st(), ID: id, Key: signingKey(b, 32), GraceMs: graceMs}
}

// refuseAuth is refuse for the principal, token, grant and key commands:
// the refused result carries none of their entities either.
func (e *env) refuseAuth(cmd fsm.Command, code fsm.Code, substr string) *fsm.Error {
	e.t.Helper()
	res, _ := e.m.State().Try(e.next, cmd)
	if res.Err == nil {
		e.t.Fatalf("%T: expected %v %q, got success (NoOp=%v)", cmd, code, substr, res.NoOp)
	}
	if res.Principal != nil || res.AuthToken != nil || res.Grants != nil || res.AuthKeys != nil {
		e.t.Fatalf("%T: rejected result carries entities: %+v", cmd, res)
	}
	return e.refuse(cmd, code, substr)
}

// run runs f as a subtest with e reporting to it.
func (e *env) run(t *testing.T, name string, f func()) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		e.t = t
		f()
	})
	e.t = t
}

func principalNames(ps []*fsm.Principal) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func tokenIDsOf(ks []*fsm.AuthToken) []string {
	out := []string{}
	for _, k := range ks {
		out = append(out, k.ID)
	}
	return out
}

func keyIDsOf(ks []fsm.AuthSigningKey) []string {
	out := []string{}
	for _, k := range ks {
		out = append(out, k.ID)
	}
	return out
}

func TestCreatePrincipal(t *testing.T) {
	e := newEnv(t)
	res := e.changed(&fsm.CreatePrincipal{Stamp: e.st(), Principal: fsm.Principal{Name: "bob@example.com", Type: fsm.PrincipalUser,
		CreatedAt: 1, CreatedBy: "forged"}})
	want := &fsm.Principal{Name: "bob@example.com", Type: fsm.PrincipalUser, CreatedAt: e.clock, CreatedBy: owner}
	if !reflect.DeepEqual(res.Principal, want) {
		t.Fatalf("principal = %+v, want %+v", res.Principal, want)
	}
	svc := e.createPrincipal(serviceNamed("etl", "client-1"))
	if svc.ClientID != "client-1" || !reflect.DeepEqual(svc.Secret, secretOf("client-1")) || svc.Admin {
		t.Fatalf("service = %+v", svc)
	}
	st := e.m.State()
	if p, ok := st.Principal("bob@example.com"); !ok || !reflect.DeepEqual(p, want) {
		t.Fatalf("Principal(bob) = %+v, %v", p, ok)
	}
	if p, ok := st.PrincipalByClientID("client-1"); !ok || p.Name != "etl" {
		t.Fatalf("PrincipalByClientID = %+v, %v", p, ok)
	}
	for _, id := range []string{"", "client-2", "etl"} {
		if p, ok := st.PrincipalByClientID(id); ok {
			t.Fatalf("PrincipalByClientID(%q) = %+v", id, p)
		}
	}
	if _, ok := st.Principal("BOB@example.com"); ok {
		t.Fatal("principal names are matched exactly")
	}
	if st.HasAdmin() {
		t.Fatal("HasAdmin without an admin")
	}

	create := func(p fsm.Principal) *fsm.CreatePrincipal { return &fsm.CreatePrincipal{Stamp: e.st(), Principal: p} }
	withClient := func(p fsm.Principal, id string, secret *fsm.SecretHash) fsm.Principal {
		p.ClientID, p.Secret = id, secret
		return p
	}
	svc2 := fsm.Principal{Name: "s2", Type: fsm.PrincipalService}
	for _, tc := range []struct {
		what   string
		p      fsm.Principal
		code   fsm.Code
		substr string
	}{
		{"service without client id", withClient(svc2, "", secretOf("x")), fsm.CodeInvalid, "only one, has a client id"},
		{"service without secret", withClient(svc2, "client-2", nil), fsm.CodeInvalid, "only one, has a client id"},
		{"service with neither", withClient(svc2, "", nil), fsm.CodeInvalid, "only one, has a client id"},
		{"service with an empty secret", withClient(svc2, "client-2", &fsm.SecretHash{}), fsm.CodeInvalid, "only one, has a client id"},
		{"service with a secret without hash", withClient(svc2, "client-2", &fsm.SecretHash{Salt: "s"}), fsm.CodeInvalid, "only one, has a client id"},
		{"user with client id and secret", withClient(userNamed("u2"), "client-2", secretOf("x")), fsm.CodeInvalid, "only one, has a client id"},
		{"user with a client id", withClient(userNamed("u2"), "client-2", nil), fsm.CodeInvalid, "only one, has a client id"},
		{"user with a secret", withClient(userNamed("u2"), "", secretOf("x")), fsm.CodeInvalid, "only one, has a client id"},
		{"unknown type", fsm.Principal{Name: "g", Type: "group"}, fsm.CodeInvalid, `Invalid principal type "group"`},
		{"no type", fsm.Principal{Name: "g"}, fsm.CodeInvalid, "Invalid principal type"},
		{"duplicate name", userNamed("bob@example.com"), fsm.CodePrincipalExists, "Principal already exists: bob@example.com"},
		{"duplicate service name", serviceNamed("etl", "client-9"), fsm.CodePrincipalExists, "Principal already exists: etl"},
		{"duplicate client id", serviceNamed("etl2", "client-1"), fsm.CodeInvalid, "client id is already in use"},
		{"empty name", userNamed(""), fsm.CodeInvalid, "A principal name is required"},
		{"leading space", userNamed(" bob"), fsm.CodeInvalid, "may not start or end with a space"},
		{"trailing space", userNamed("bob "), fsm.CodeInvalid, "may not start or end with a space"},
		{"leading tab", userNamed("\tbob"), fsm.CodeInvalid, "may not start or end with a space"},
		{"NUL", userNamed("a\x00b"), fsm.CodeInvalid, "control characters"},
		{"newline", userNamed("a\nb"), fsm.CodeInvalid, "control characters"},
		{"DEL", userNamed("a\x7fb"), fsm.CodeInvalid, "control characters"},
		{"C1 control", userNamed("a\u0085b"), fsm.CodeInvalid, "control characters"},
		{"invalid UTF-8", userNamed("a\xffb"), fsm.CodeInvalid, "control characters"},
		{"slash", userNamed("a/b"), fsm.CodeInvalid, "'/'"},
		{"too long", userNamed(strings.Repeat("p", 256)), fsm.CodeInvalid, "at most 255 characters"},
	} {
		e.run(t, tc.what, func() { e.refuseAuth(create(tc.p), tc.code, tc.substr) })
	}
	// What a refused principal would have taken is still free.
	if _, ok := e.m.State().PrincipalByClientID("client-2"); ok {
		t.Fatal("a refused principal's client id was indexed")
	}
	e.createPrincipal(userNamed(strings.Repeat("p", 255)))
	e.createPrincipal(userNamed("Bob@example.com")) // another name
	e.createPrincipal(userNamed("ünïcode user"))
	e.createPrincipal(serviceNamed("etl2", "client-2"))
	if got := e.m.State().ObjectCounts()["principal"]; got != 6 {
		t.Fatalf("principal count %d", got)
	}
}

func TestPrincipalsListInNameOrderAndPage(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"d", "b", "a", "c"} {
		e.createPrincipal(userNamed(n))
	}
	st := e.m.State()
	for _, tc := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 0, []string{"a", "b", "c", "d"}},
		{"", 2, []string{"a", "b"}},
		{"b", 2, []string{"c", "d"}},
		{"a", 1, []string{"b"}},
		{"bb", 0, []string{"c", "d"}},
		{"d", 0, []string{}},
	} {
		if got := principalNames(st.Principals(tc.after, tc.limit)); !slices.Equal(got, tc.want) {
			t.Fatalf("Principals(%q, %d) = %v, want %v", tc.after, tc.limit, got, tc.want)
		}
	}
}

func TestBootstrapAdminOnce(t *testing.T) {
	e := newEnv(t)
	if e.m.State().HasAdmin() {
		t.Fatal("an admin before bootstrap")
	}
	// A bootstrap whose token is refused creates no admin either.
	bad := e.bootstrap("opaque-bad")
	bad.Token.Secret.Hash = ""
	e.refuseAuth(bad, fsm.CodeInvalid, "needs an id, a salt and a hash")
	if st := e.m.State(); st.HasAdmin() || len(st.Principals("", 0)) != 0 {
		t.Fatal("a refused bootstrap left a principal")
	}
	past := e.bootstrap("opaque-past")
	past.Token.ExpiresAt = past.Time
	e.refuseAuth(past, fsm.CodeInvalid, "must be in the future")

	res := e.changed(e.bootstrap("opaque-1"))
	at := e.clock
	if p := res.Principal; p.Name != fsm.AdminPrincipal || !p.Admin || p.CreatedAt != at {
		t.Fatalf("admin = %+v", p)
	}
	st := e.m.State()
	if !st.HasAdmin() {
		t.Fatal("no admin after bootstrap")
	}
	k, ok := st.AuthToken("opaque-1")
	want := &fsm.AuthToken{ID: "opaque-1", Principal: fsm.AdminPrincipal, Secret: *secretOf("opaque-1"), CreatedAt: at, CreatedBy: owner}
	if !ok || !reflect.DeepEqual(k, want) {
		t.Fatalf("bootstrap token = %+v, %v", k, ok)
	}
	// Another node racing to bootstrap, with its own token, changes nothing.
	e.noop(e.bootstrap("opaque-2"))
	if _, ok := e.m.State().AuthToken("opaque-2"); ok {
		t.Fatal("a second bootstrap added its token")
	}
	other := e.bootstrap("opaque-3")
	other.Principal.Name = "root"
	e.noop(other)
	if _, ok := e.m.State().Principal("root"); ok {
		t.Fatal("a second bootstrap added its admin")
	}
	// Without IfNoAdmin, the admin's name is taken like any other.
	e.refuseAuth(&fsm.CreatePrincipal{Stamp: e.st(), Principal: userNamed(fsm.AdminPrincipal)}, fsm.CodePrincipalExists, "Principal already exists: admin")
}

func TestOpaqueTokens(t *testing.T) {
	e := newEnv(t)
	e.changed(e.bootstrap("opaque-b"))
	e.createPrincipal(userNamed("bob"))
	for _, id := range []string{"opaque-a", "tok-1", "opaque", "opaquex", "xopaque-1", "opaque-c"} {
		e.changed(e.authToken("bob", id))
	}
	if got := tokenIDsOf(e.m.State().OpaqueTokens()); !slices.Equal(got, []string{"opaque-a", "opaque-b", "opaque-c"}) {
		t.Fatalf("OpaqueTokens = %v", got)
	}
	e.changed(&fsm.RevokeAuthToken{Stamp: e.st(), ID: "opaque-b"})
	if got := tokenIDsOf(e.m.State().OpaqueTokens()); !slices.Equal(got, []string{"opaque-a", "opaque-c"}) {
		t.Fatalf("OpaqueTokens after a revoke = %v", got)
	}
	if got := newEnv(t).m.State().OpaqueTokens(); len(got) != 0 {
		t.Fatalf("OpaqueTokens of a new state = %v", tokenIDsOf(got))
	}
}

func TestAuthTokens(t *testing.T) {
	e := newEnv(t)
	e.createPrincipal(userNamed("bob"))
	c := e.authToken("bob", "t1")
	c.Token.ExpiresAt = c.Time + 1
	c.Token.CreatedAt, c.Token.CreatedBy = 1, "forged"
	res := e.changed(c)
	want := &fsm.AuthToken{ID: "t1", Principal: "bob", Secret: *secretOf("t1"), ExpiresAt: e.clock + 1, CreatedAt: e.clock, CreatedBy: owner}
	if !reflect.DeepEqual(res.AuthToken, want) {
		t.Fatalf("token = %+v, want %+v", res.AuthToken, want)
	}
	if k, ok := e.m.State().AuthToken("t1"); !ok || !reflect.DeepEqual(k, want) {
		t.Fatalf("AuthToken(t1) = %+v, %v", k, ok)
	}
	if k := res.AuthToken; k.ExpiredAt(k.ExpiresAt-1) || !k.ExpiredAt(k.ExpiresAt) || !k.ExpiredAt(k.ExpiresAt+1) {
		t.Fatal("ExpiredAt is not now >= ExpiresAt")
	}
	if (&fsm.AuthToken{}).ExpiredAt(1 << 62) {
		t.Fatal("a token without expiry expired")
	}

	expiring := func(at func(now int64) int64) *fsm.CreateAuthToken {
		c := e.authToken("bob", "t2")
		c.Token.ExpiresAt = at(c.Time)
		return c
	}
	noHash := e.authToken("bob", "t2")
	noHash.Token.Secret.Hash = ""
	noSalt := e.authToken("bob", "t2")
	noSalt.Token.Secret.Salt = ""
	for _, tc := range []struct {
		what   string
		c      *fsm.CreateAuthToken
		code   fsm.Code
		substr string
	}{
		{"missing principal", e.authToken("carol", "t2"), fsm.CodePrincipalNotFound, "Principal not found: carol"},
		{"no principal", e.authToken("", "t2"), fsm.CodePrincipalNotFound, "Principal not found"},
		{"duplicate id", e.authToken("bob", "t1"), fsm.CodeInvalid, "token id is already in use"},
		{"no id", e.authToken("bob", ""), fsm.CodeInvalid, "needs an id, a salt and a hash"},
		{"no hash", noHash, fsm.CodeInvalid, "needs an id, a salt and a hash"},
		{"no salt", noSalt, fsm.CodeInvalid, "needs an id, a salt and a hash"},
		{"expires at the stamp", expiring(func(now int64) int64 { return now }), fsm.CodeInvalid, "must be in the future"},
		{"expired", expiring(func(now int64) int64 { return now - 1 }), fsm.CodeInvalid, "must be in the future"},
		{"negative expiry", expiring(func(int64) int64 { return -1 }), fsm.CodeInvalid, "must be in the future"},
	} {
		e.run(t, tc.what, func() { e.refuseAuth(tc.c, tc.code, tc.substr) })
	}
	// A duplicate id is refused whoever holds it.
	e.createPrincipal(userNamed("carol"))
	e.refuseAuth(e.authToken("carol", "t1"), fsm.CodeInvalid, "token id is already in use")
	if k, _ := e.m.State().AuthToken("t1"); k.Principal != "bob" {
		t.Fatalf("t1 belongs to %s", k.Principal)
	}
	e.changed(e.authToken("carol", "t2"))

	res = e.changed(&fsm.RevokeAuthToken{Stamp: e.st(), ID: "t1"})
	if !reflect.DeepEqual(res.AuthToken, want) {
		t.Fatalf("revoked %+v", res.AuthToken)
	}
	if k, ok := e.m.State().AuthToken("t1"); ok {
		t.Fatalf("revoked token still found: %+v", k)
	}
	e.refuseAuth(&fsm.RevokeAuthToken{Stamp: e.st(), ID: "t1"}, fsm.CodeTokenNotFound, "Token not found: t1")
	e.refuseAuth(&fsm.RevokeAuthToken{Stamp: e.st(), ID: ""}, fsm.CodeTokenNotFound, "Token not found")
	if _, ok := e.m.State().AuthToken("t2"); !ok {
		t.Fatal("revoking t1 took t2")
	}
	// A revoked token's id may be used again.
	e.changed(e.authToken("carol", "t1"))
}

func TestDeletePrincipal(t *testing.T) {
	e := newEnv(t)
	tb := e.createExternal("unity", "default", "events")
	e.changed(e.bootstrap("opaque-admin"))
	e.createPrincipal(userNamed("bob"))
	e.createPrincipal(userNamed("carol"))
	e.createPrincipal(serviceNamed("etl", "client-1"))
	for _, k := range [][2]string{{"bob", "b1"}, {"carol", "c1"}, {"bob", "b2"}, {"etl", "e1"}} {
		e.changed(e.authToken(k[0], k[1]))
	}
	st := e.m.State()
	ms := st.MetastoreKey()
	unity, _ := st.Catalog("unity")
	cat := fsm.SecurableKey(fsm.SecurableCatalog, unity.ID)
	tbl := fsm.SecurableKey(fsm.SecurableTable, tb.ID)
	e.changed(e.grant(fsm.SecurableMetastore, nil, addPriv("bob", fsm.PrivCreateCatalog)))
	e.changed(e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("bob", fsm.PrivUseCatalog), addPriv("carol", fsm.PrivUseCatalog)))
	e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect), addPriv("etl", fsm.PrivModify)))
	before := e.m.State()
	storedCat := slices.Clone(before.Grants(cat))

	res := e.changed(&fsm.DeletePrincipal{Stamp: e.st(), Name: "bob"})
	if res.Principal == nil || res.Principal.Name != "bob" {
		t.Fatalf("deleted %+v", res.Principal)
	}
	st = e.m.State()
	if _, ok := st.Principal("bob"); ok {
		t.Fatal("bob still there")
	}
	for _, id := range []string{"b1", "b2"} {
		if k, ok := st.AuthToken(id); ok {
			t.Fatalf("token %s of a deleted principal still found: %+v", id, k)
		}
	}
	for _, id := range []string{"c1", "e1", "opaque-admin"} {
		if _, ok := st.AuthToken(id); !ok {
			t.Fatalf("token %s of another principal went with bob", id)
		}
	}
	for key, want := range map[string][]fsm.PrivilegeAssignment{
		ms:  nil,
		cat: {{Principal: "carol", Privileges: []string{fsm.PrivUseCatalog}}},
		tbl: {{Principal: "etl", Privileges: []string{fsm.PrivModify}}},
	} {
		if got := st.Grants(key); !reflect.DeepEqual(got, want) {
			t.Fatalf("grants on %s = %+v, want %+v", key, got, want)
		}
		if st.HasPrivilege(key, "bob", fsm.PrivSelect) || st.HasPrivilege(key, "bob", fsm.PrivUseCatalog) {
			t.Fatalf("bob still holds privileges on %s", key)
		}
	}
	if got := grantRecords(t, st); len(got) != 2 {
		t.Fatalf("grant records after the delete: %v", got)
	}
	if !reflect.DeepEqual(before.Grants(cat), storedCat) {
		t.Fatal("deleting a principal changed the stored grants in place")
	}
	e.refuseAuth(&fsm.DeletePrincipal{Stamp: e.st(), Name: "bob"}, fsm.CodePrincipalNotFound, "Principal not found: bob")
	e.refuseAuth(&fsm.DeletePrincipal{Stamp: e.st(), Name: ""}, fsm.CodePrincipalNotFound, "Principal not found")

	// A new bob inherits neither tokens nor grants.
	e.createPrincipal(userNamed("bob"))
	st = e.m.State()
	for _, key := range []string{ms, cat, tbl} {
		if st.HasPrivilege(key, "bob", fsm.PrivCreateCatalog) || st.HasPrivilege(key, "bob", fsm.PrivUseCatalog) ||
			st.HasPrivilege(key, "bob", fsm.PrivSelect) {
			t.Fatalf("new bob holds privileges on %s", key)
		}
	}
	if _, ok := st.AuthToken("b1"); ok {
		t.Fatal("new bob has the old bob's token")
	}

	// A service's client id is free again once it is deleted.
	e.changed(&fsm.DeletePrincipal{Stamp: e.st(), Name: "etl"})
	if p, ok := e.m.State().PrincipalByClientID("client-1"); ok {
		t.Fatalf("client id of a deleted service found: %+v", p)
	}
	if got := e.m.State().Grants(tbl); got != nil {
		t.Fatalf("grants on the table after both holders went: %+v", got)
	}
	e.createPrincipal(serviceNamed("etl-2", "client-1"))

	// The last admin stays.
	e.refuseAuth(&fsm.DeletePrincipal{Stamp: e.st(), Name: fsm.AdminPrincipal}, fsm.CodeInvalid, "last metastore admin")
	e.createPrincipal(fsm.Principal{Name: "second", Type: fsm.PrincipalUser, Admin: true})
	e.changed(&fsm.DeletePrincipal{Stamp: e.st(), Name: fsm.AdminPrincipal})
	st = e.m.State()
	if _, ok := st.AuthToken("opaque-admin"); ok || !st.HasAdmin() {
		t.Fatalf("after deleting the first admin: token %v, HasAdmin %v", ok, st.HasAdmin())
	}
	e.refuseAuth(&fsm.DeletePrincipal{Stamp: e.st(), Name: "second"}, fsm.CodeInvalid, "last metastore admin")
	// With the admin deleted a bootstrap does nothing while another admin is left.
	e.noop(e.bootstrap("opaque-again"))
}

// grantRecords lists the securables of a state's grant records.
func grantRecords(t *testing.T, st *fsm.State) []string {
	t.Helper()
	var out []string
	err := st.WriteRecords(func(kind byte, payload []byte) error {
		if kind == fsm.RecordGrants {
			if _, err := fsm.DecodeRecord(kind, payload); err != nil {
				return err
			}
			out = append(out, string(payload))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// grantsEnv has a securable of every kind: the metastore, catalog unity,
// schema unity.default, namespace unity.default.ns and the tables
// unity.default.events and unity.default.ns.ice.
func grantsEnv(t *testing.T) (*env, map[string]string) {
	e := newEnv(t)
	ns := e.createNamespace("unity", "default", "ns")
	events := e.createExternal("unity", "default", "events")
	ice := e.createIceberg([]string{"unity", "default", "ns"}, "ice")
	st := e.m.State()
	unity, _ := st.Catalog("unity")
	def, _ := st.Schema("unity", "default")
	return e, map[string]string{
		"metastore":            fsm.SecurableKey(fsm.SecurableMetastore, "ms-1"),
		"unity":                fsm.SecurableKey(fsm.SecurableCatalog, unity.ID),
		"unity.default":        fsm.SecurableKey(fsm.SecurableSchema, def.ID),
		"unity.default.ns":     fsm.SecurableKey(fsm.SecurableSchema, ns.ID),
		"unity.default.events": fsm.SecurableKey(fsm.SecurableTable, events.ID),
		"unity.default.ns.ice": fsm.SecurableKey(fsm.SecurableTable, ice.ID),
	}
}

func TestUpdatePermissionsOnEverySecurable(t *testing.T) {
	e, keys := grantsEnv(t)
	if got := e.m.State().MetastoreKey(); got != keys["metastore"] {
		t.Fatalf("MetastoreKey = %q", got)
	}
	if got := fsm.NewState().MetastoreKey(); got != "" {
		t.Fatalf("MetastoreKey before Init = %q", got)
	}
	for _, tc := range []struct {
		typ  string
		path []string
		key  string
		priv string
	}{
		{fsm.SecurableMetastore, nil, keys["metastore"], fsm.PrivCreateCatalog},
		{fsm.SecurableCatalog, []string{"unity"}, keys["unity"], fsm.PrivUseCatalog},
		{fsm.SecurableSchema, []string{"unity", "default"}, keys["unity.default"], fsm.PrivUseSchema},
		{fsm.SecurableSchema, []string{"unity", "default", "ns"}, keys["unity.default.ns"], fsm.PrivCreateTable},
		{fsm.SecurableTable, []string{"unity", "default", "events"}, keys["unity.default.events"], fsm.PrivSelect},
		{fsm.SecurableTable, []string{"unity", "default", "ns", "ice"}, keys["unity.default.ns.ice"], fsm.PrivModify},
	} {
		e.run(t, tc.typ+" "+strings.Join(tc.path, "."), func() {
			t := e.t
			res := e.changed(e.grant(tc.typ, tc.path, addPriv("bob", tc.priv)))
			want := &fsm.Grants{Securable: tc.key, Assignments: []fsm.PrivilegeAssignment{{Principal: "bob", Privileges: []string{tc.priv}}}}
			if !reflect.DeepEqual(res.Grants, want) {
				t.Fatalf("grants = %+v, want %+v", res.Grants, want)
			}
			st := e.m.State()
			if got := st.Grants(tc.key); !reflect.DeepEqual(got, want.Assignments) {
				t.Fatalf("Grants(%s) = %+v", tc.key, got)
			}
			if !st.HasPrivilege(tc.key, "bob", tc.priv) || st.HasPrivilege(tc.key, "carol", tc.priv) {
				t.Fatal("HasPrivilege")
			}
			if !slices.Contains(fsm.Grantable(tc.typ), tc.priv) {
				t.Fatalf("Grantable(%s) lacks %s", tc.typ, tc.priv)
			}
		})
	}
	// Each securable holds its own grant: six records.
	if got := grantRecords(t, e.m.State()); len(got) != 6 {
		t.Fatalf("grant records %v", got)
	}
}

func TestUpdatePermissionsRefusals(t *testing.T) {
	e, _ := grantsEnv(t)
	e.changed(e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("bob", fsm.PrivUseCatalog)))
	e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect)))
	digest := e.m.State().Digest()
	for _, tc := range []struct {
		what   string
		c      *fsm.UpdatePermissions
		code   fsm.Code
		substr string
	}{
		{"SELECT on the metastore", e.grant(fsm.SecurableMetastore, nil, addPriv("bob", fsm.PrivSelect)), fsm.CodeInvalid, `Privilege "SELECT" cannot be granted on a metastore`},
		{"ALL on the metastore", e.grant(fsm.SecurableMetastore, nil, addPriv("bob", fsm.PrivAll)), fsm.CodeInvalid, "cannot be granted on a metastore"},
		{"USE CATALOG on a table", e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivUseCatalog)), fsm.CodeInvalid, `Privilege "USE CATALOG" cannot be granted on a table`},
		{"USE SCHEMA on a table", e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivUseSchema)), fsm.CodeInvalid, "cannot be granted on a table"},
		{"USE CATALOG on a schema", e.grant(fsm.SecurableSchema, []string{"unity", "default"}, addPriv("bob", fsm.PrivUseCatalog)), fsm.CodeInvalid, "cannot be granted on a schema"},
		{"CREATE CATALOG on a catalog", e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("bob", fsm.PrivCreateCatalog)), fsm.CodeInvalid, "cannot be granted on a catalog"},
		{"lower case", e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("bob", "select")), fsm.CodeInvalid, `Privilege "select" cannot be granted`},
		{"unknown privilege", e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("bob", "EXECUTE")), fsm.CodeInvalid, "cannot be granted"},
		{"removing a privilege the type does not take", e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, removePriv("bob", fsm.PrivUseCatalog)), fsm.CodeInvalid, "cannot be granted on a table"},
		{"a bad change after a good one", e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("carol", fsm.PrivUseCatalog), removePriv("bob", fsm.PrivUseCatalog), addPriv("dave", fsm.PrivCreateCatalog)), fsm.CodeInvalid, "cannot be granted"},
		{"bad principal", e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("a/b", fsm.PrivUseCatalog)), fsm.CodeInvalid, "principal name"},
		{"no principal", e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("", fsm.PrivUseCatalog)), fsm.CodeInvalid, "principal name is required"},
		{"missing catalog", e.grant(fsm.SecurableCatalog, []string{"nope"}, addPriv("bob", fsm.PrivUseCatalog)), fsm.CodeCatalogNotFound, "Catalog not found: nope"},
		{"schema of a missing catalog", e.grant(fsm.SecurableSchema, []string{"nope", "default"}, addPriv("bob", fsm.PrivUseSchema)), fsm.CodeCatalogNotFound, "Catalog not found: nope"},
		{"missing schema", e.grant(fsm.SecurableSchema, []string{"unity", "nope"}, addPriv("bob", fsm.PrivUseSchema)), fsm.CodeSchemaNotFound, "Schema not found: unity.nope"},
		{"missing namespace", e.grant(fsm.SecurableSchema, []string{"unity", "default", "nope"}, addPriv("bob", fsm.PrivUseSchema)), fsm.CodeSchemaNotFound, "Namespace not found: unity.default.nope"},
		{"missing deeper namespace", e.grant(fsm.SecurableSchema, []string{"unity", "default", "ns", "nope"}, addPriv("bob", fsm.PrivUseSchema)), fsm.CodeSchemaNotFound, "Namespace not found: unity.default.ns.nope"},
		{"missing table", e.grant(fsm.SecurableTable, []string{"unity", "default", "nope"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeTableNotFound, "Table not found: unity.default.nope"},
		{"table of a missing schema", e.grant(fsm.SecurableTable, []string{"unity", "nope", "events"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeSchemaNotFound, "Schema not found: unity.nope"},
		{"table of a missing catalog", e.grant(fsm.SecurableTable, []string{"nope", "default", "events"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeCatalogNotFound, "Catalog not found: nope"},
		{"table in a missing namespace", e.grant(fsm.SecurableTable, []string{"unity", "default", "nope", "ice"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeSchemaNotFound, "Namespace not found"},
		{"a namespace named as a table", e.grant(fsm.SecurableTable, []string{"unity", "default", "ns"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeTableNotFound, "Table not found: unity.default.ns"},
		{"a table named as a schema", e.grant(fsm.SecurableSchema, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeSchemaNotFound, "Namespace not found"},
		{"metastore with a path", e.grant(fsm.SecurableMetastore, []string{"unity"}, addPriv("bob", fsm.PrivCreateCatalog)), fsm.CodeInvalid, "Unknown securable"},
		{"catalog with two names", e.grant(fsm.SecurableCatalog, []string{"unity", "default"}, addPriv("bob", fsm.PrivUseCatalog)), fsm.CodeInvalid, "Unknown securable"},
		{"catalog without a name", e.grant(fsm.SecurableCatalog, nil, addPriv("bob", fsm.PrivUseCatalog)), fsm.CodeInvalid, "Unknown securable"},
		{"schema with one name", e.grant(fsm.SecurableSchema, []string{"unity"}, addPriv("bob", fsm.PrivUseSchema)), fsm.CodeInvalid, "Unknown securable"},
		{"table with two names", e.grant(fsm.SecurableTable, []string{"unity", "events"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeInvalid, "Unknown securable"},
		{"unknown type", e.grant("volume", []string{"unity", "default", "v"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeInvalid, "Unknown securable"},
		{"upper-case type", e.grant("TABLE", []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeInvalid, "Unknown securable"},
	} {
		e.run(t, tc.what, func() { e.refuseAuth(tc.c, tc.code, tc.substr) })
	}
	if got := grantRecords(t, e.m.State()); len(got) != 2 || e.m.State().Digest() != digest {
		t.Fatalf("refused updates changed the grants: %v", got)
	}
	// Before Init there is no metastore to grant on.
	m := fsm.NewMachine()
	if res := m.ApplyCommand(1, e.grant(fsm.SecurableMetastore, nil, addPriv("bob", fsm.PrivCreateCatalog))); res.Err == nil || res.Err.Code != fsm.CodeInvalid {
		t.Fatalf("metastore grant before Init: %+v", res)
	}
}

func TestUpdatePermissionsSortsAndNoOps(t *testing.T) {
	e, keys := grantsEnv(t)
	cat := []string{"unity"}
	res := e.changed(e.grant(fsm.SecurableCatalog, cat,
		addPriv("zed", fsm.PrivSelect, fsm.PrivModify, fsm.PrivSelect),
		addPriv("amy", fsm.PrivUseSchema, fsm.PrivUseCatalog),
		addPriv("mia", fsm.PrivAll),
		addPriv("amy", fsm.PrivCreateSchema, fsm.PrivUseCatalog),
		fsm.PermissionChange{Principal: "bob", Add: []string{fsm.PrivSelect, fsm.PrivModify}, Remove: []string{fsm.PrivModify}},
		fsm.PermissionChange{Principal: "nil", Add: []string{fsm.PrivSelect}, Remove: []string{fsm.PrivSelect}},
	))
	want := []fsm.PrivilegeAssignment{
		{Principal: "amy", Privileges: []string{fsm.PrivCreateSchema, fsm.PrivUseCatalog, fsm.PrivUseSchema}},
		{Principal: "bob", Privileges: []string{fsm.PrivSelect}},
		{Principal: "mia", Privileges: []string{fsm.PrivAll}},
		{Principal: "zed", Privileges: []string{fsm.PrivModify, fsm.PrivSelect}},
	}
	if !reflect.DeepEqual(res.Grants.Assignments, want) {
		t.Fatalf("assignments = %+v, want %+v", res.Grants.Assignments, want)
	}
	st := e.m.State()
	if got := st.Grants(keys["unity"]); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored = %+v", got)
	}
	stored := st.Grants(keys["unity"])
	kept := jsonOf(t, stored)

	// HasPrivilege: ALL PRIVILEGES stands for every privilege.
	for _, tc := range []struct {
		principal, priv string
		want            bool
	}{
		{"mia", fsm.PrivSelect, true}, {"mia", fsm.PrivModify, true}, {"mia", fsm.PrivUseCatalog, true}, {"mia", fsm.PrivAll, true},
		{"bob", fsm.PrivSelect, true}, {"bob", fsm.PrivModify, false}, {"bob", fsm.PrivAll, false},
		{"amy", fsm.PrivUseSchema, true}, {"amy", fsm.PrivSelect, false},
		{"nil", fsm.PrivSelect, false}, {"nobody", fsm.PrivSelect, false}, {"MIA", fsm.PrivSelect, false},
	} {
		if got := st.HasPrivilege(keys["unity"], tc.principal, tc.priv); got != tc.want {
			t.Fatalf("HasPrivilege(%s, %s) = %v", tc.principal, tc.priv, got)
		}
	}
	if st.HasPrivilege(keys["unity.default"], "mia", fsm.PrivSelect) {
		t.Fatal("a grant on the catalog answered for its schema (inheritance is not the state's)")
	}

	// Nothing changes: NoOp, whatever the order of privileges.
	for _, c := range []*fsm.UpdatePermissions{
		e.grant(fsm.SecurableCatalog, cat),
		e.grant(fsm.SecurableCatalog, cat, addPriv("zed", fsm.PrivSelect, fsm.PrivModify)),
		e.grant(fsm.SecurableCatalog, cat, addPriv("amy", fsm.PrivUseSchema), addPriv("amy", fsm.PrivUseCatalog, fsm.PrivCreateSchema)),
		e.grant(fsm.SecurableCatalog, cat, removePriv("bob", fsm.PrivModify)),
		e.grant(fsm.SecurableCatalog, cat, removePriv("nobody", fsm.PrivModify)),
		e.grant(fsm.SecurableCatalog, cat, addPriv("bob", fsm.PrivModify), removePriv("bob", fsm.PrivModify)),
		e.grant(fsm.SecurableCatalog, cat, removePriv("zed", fsm.PrivSelect), addPriv("zed", fsm.PrivSelect)),
		e.grant(fsm.SecurableSchema, []string{"unity", "default"}, removePriv("bob", fsm.PrivSelect)),
	} {
		res := e.noop(c)
		if res.Grants == nil || res.Grants.Securable == "" {
			t.Fatalf("a no-op update says nothing of the grants: %+v", res)
		}
	}
	if got := grantRecords(t, e.m.State()); len(got) != 1 {
		t.Fatalf("grant records after no-ops: %v", got)
	}

	// Removing changes a copy: the state read before keeps its grants.
	e.changed(e.grant(fsm.SecurableCatalog, cat, removePriv("amy", fsm.PrivUseSchema), removePriv("zed", fsm.PrivModify, fsm.PrivSelect),
		addPriv("bob", fsm.PrivModify)))
	if jsonOf(t, stored) != kept || jsonOf(t, st.Grants(keys["unity"])) != kept {
		t.Fatal("an update changed the stored grants in place")
	}
	want = []fsm.PrivilegeAssignment{
		{Principal: "amy", Privileges: []string{fsm.PrivCreateSchema, fsm.PrivUseCatalog}},
		{Principal: "bob", Privileges: []string{fsm.PrivModify, fsm.PrivSelect}},
		{Principal: "mia", Privileges: []string{fsm.PrivAll}},
	}
	if got := e.m.State().Grants(keys["unity"]); !reflect.DeepEqual(got, want) {
		t.Fatalf("after removes = %+v, want %+v", got, want)
	}

	// Removing everything leaves no record.
	res = e.changed(e.grant(fsm.SecurableCatalog, cat, removePriv("amy", fsm.PrivCreateSchema, fsm.PrivUseCatalog),
		removePriv("bob", fsm.PrivModify, fsm.PrivSelect), removePriv("mia", fsm.PrivAll)))
	if res.Grants == nil || len(res.Grants.Assignments) != 0 {
		t.Fatalf("result after removing everything: %+v", res.Grants)
	}
	st = e.m.State()
	if got := st.Grants(keys["unity"]); got != nil {
		t.Fatalf("grants after removing everything: %+v", got)
	}
	if got := grantRecords(t, st); len(got) != 0 {
		t.Fatalf("grant records after removing everything: %v", got)
	}
	// Add then remove in one command on a fresh securable leaves none either.
	e.noop(e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect), removePriv("bob", fsm.PrivSelect)))
	e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect)))
	e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, removePriv("bob", fsm.PrivSelect)))
	if got := grantRecords(t, e.m.State()); len(got) != 0 {
		t.Fatalf("grant records after add and remove: %v", got)
	}
	// The same objects created the same way, without any grant command.
	if f, _ := grantsEnv(t); e.m.State().Digest() != f.m.State().Digest() {
		t.Fatal("adding and removing grants left a trace in the state")
	}
}

func TestGrantableIsACopy(t *testing.T) {
	g := fsm.Grantable(fsm.SecurableTable)
	if !slices.Equal(g, []string{fsm.PrivSelect, fsm.PrivModify, fsm.PrivAll}) {
		t.Fatalf("Grantable(table) = %v", g)
	}
	g[0] = fsm.PrivUseCatalog
	if fsm.Grantable(fsm.SecurableTable)[0] != fsm.PrivSelect {
		t.Fatal("Grantable returns the package's own list")
	}
	if fsm.Grantable("volume") != nil {
		t.Fatal("Grantable of an unknown type")
	}
	if !slices.Equal(fsm.Grantable(fsm.SecurableMetastore), []string{fsm.PrivCreateCatalog}) {
		t.Fatalf("Grantable(metastore) = %v", fsm.Grantable(fsm.SecurableMetastore))
	}
}

func TestGrantsFollowTheObjectNotItsName(t *testing.T) {
	e, keys := grantsEnv(t)
	events := []string{"unity", "default", "events"}
	e.changed(e.grant(fsm.SecurableTable, events, addPriv("bob", fsm.PrivSelect)))
	e.changed(e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("bob", fsm.PrivUseCatalog)))
	e.changed(e.grant(fsm.SecurableSchema, []string{"unity", "default", "ns"}, addPriv("bob", fsm.PrivUseSchema)))

	// A renamed table keeps its grants, under its new name too.
	e.changed(&fsm.RenameTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "events", NewName: "clicks"})
	st := e.m.State()
	if !st.HasPrivilege(keys["unity.default.events"], "bob", fsm.PrivSelect) {
		t.Fatal("a renamed table lost its grants")
	}
	e.refuseAuth(e.grant(fsm.SecurableTable, events, addPriv("bob", fsm.PrivModify)), fsm.CodeTableNotFound, "Table not found: unity.default.events")
	res := e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "clicks"}, addPriv("bob", fsm.PrivModify)))
	if res.Grants.Securable != keys["unity.default.events"] ||
		!reflect.DeepEqual(res.Grants.Assignments, []fsm.PrivilegeAssignment{{Principal: "bob", Privileges: []string{fsm.PrivModify, fsm.PrivSelect}}}) {
		t.Fatalf("grants of the renamed table = %+v", res.Grants)
	}

	// A table dropped and created again under its name has none.
	e.changed(&fsm.DeleteTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "clicks"})
	e.refuseAuth(e.grant(fsm.SecurableTable, []string{"unity", "default", "clicks"}, addPriv("bob", fsm.PrivSelect)), fsm.CodeTableNotFound, "Table not found")
	again := e.createExternal("unity", "default", "clicks")
	again2 := e.createExternal("unity", "default", "events")
	st = e.m.State()
	for _, tb := range []*fsm.Table{again, again2} {
		key := fsm.SecurableKey(fsm.SecurableTable, tb.ID)
		if key == keys["unity.default.events"] {
			t.Fatal("a new table has the old one's id")
		}
		if got := st.Grants(key); got != nil {
			t.Fatalf("a re-created table %s has grants %+v", tb.Name, got)
		}
	}
	res = e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "clicks"}, addPriv("carol", fsm.PrivSelect)))
	if len(res.Grants.Assignments) != 1 || res.Grants.Assignments[0].Principal != "carol" {
		t.Fatalf("grants of the re-created table = %+v", res.Grants)
	}

	// A renamed catalog keeps its grants; one dropped and created again
	// under the name has none.
	e.changed(&fsm.CreateCatalog{Stamp: e.st(), ID: "cat-sales", Name: "sales"})
	e.changed(e.grant(fsm.SecurableCatalog, []string{"sales"}, addPriv("bob", fsm.PrivUseCatalog)))
	e.changed(&fsm.UpdateCatalog{Stamp: e.st(), Name: "sales", NewName: "revenue"})
	salesKey := fsm.SecurableKey(fsm.SecurableCatalog, "cat-sales")
	if !e.m.State().HasPrivilege(salesKey, "bob", fsm.PrivUseCatalog) {
		t.Fatal("a renamed catalog lost its grants")
	}
	if r := e.noop(e.grant(fsm.SecurableCatalog, []string{"revenue"}, addPriv("bob", fsm.PrivUseCatalog))); r.Grants.Securable != salesKey {
		t.Fatalf("renamed catalog resolves to %s", r.Grants.Securable)
	}
	e.changed(&fsm.DeleteCatalog{Stamp: e.st(), Name: "revenue", Force: true})
	e.changed(&fsm.CreateCatalog{Stamp: e.st(), ID: "cat-revenue-2", Name: "revenue"})
	if r := e.changed(e.grant(fsm.SecurableCatalog, []string{"revenue"}, addPriv("carol", fsm.PrivUseCatalog))); len(r.Grants.Assignments) != 1 {
		t.Fatalf("grants of the re-created catalog = %+v", r.Grants)
	}

	// So does a nested namespace.
	e.changed(&fsm.DeleteNamespace{Stamp: e.st(), Path: []string{"unity", "default", "ns"}, Force: true})
	ns := e.createNamespace("unity", "default", "ns")
	if got := e.m.State().Grants(fsm.SecurableKey(fsm.SecurableSchema, ns.ID)); got != nil {
		t.Fatalf("a re-created namespace has grants %+v", got)
	}
}

func TestAuthSigningKeys(t *testing.T) {
	e := newEnv(t)
	if ks := e.m.State().AuthSigningKeys(); ks != nil {
		t.Fatalf("keys before any was set: %+v", ks)
	}
	short := e.signingKeyCmd("k0", 1, 0)
	short.Key = signingKey(1, 31)
	noID := e.signingKeyCmd("", 1, 0)
	noKey := e.signingKeyCmd("k0", 1, 0)
	noKey.Key = ""
	garbage := e.signingKeyCmd("k0", 1, 0)
	garbage.Key = "not base64!"
	for _, tc := range []struct {
		what   string
		c      *fsm.SetAuthSigningKey
		substr string
	}{
		{"short key", short, "at least 32 bytes"},
		{"no id", noID, "needs an id"},
		{"no key", noKey, "at least 32 bytes"},
		{"not base64", garbage, "at least 32 bytes"},
		{"negative grace", e.signingKeyCmd("k0", 1, -1), "Invalid grace period -1 ms"},
	} {
		e.run(t, tc.what, func() { e.refuseAuth(tc.c, fsm.CodeInvalid, tc.substr) })
	}

	first := e.signingKeyCmd("k1", 1, 0)
	first.IfAbsent = true
	res := e.changed(first)
	k1 := fsm.AuthSigningKey{ID: "k1", Key: signingKey(1, 32), CreatedAt: e.clock}
	if !reflect.DeepEqual(res.AuthKeys, &fsm.AuthSigningKeys{Keys: []fsm.AuthSigningKey{k1}}) {
		t.Fatalf("keys = %+v", res.AuthKeys)
	}
	if b, err := k1.Bytes(); err != nil || !bytes.Equal(b, bytes.Repeat([]byte{1}, 32)) {
		t.Fatalf("Bytes = %v, %v", b, err)
	}
	if !k1.Usable(0) || !k1.Usable(1<<62) {
		t.Fatal("the current key is not usable")
	}
	// A second node racing to set the first key changes nothing, and is not
	// refused for the id it repeats.
	for _, id := range []string{"k2", "k1"} {
		again := e.signingKeyCmd(id, 2, 0)
		again.IfAbsent = true
		if r := e.noop(again); !reflect.DeepEqual(r.AuthKeys.Keys, []fsm.AuthSigningKey{k1}) {
			t.Fatalf("IfAbsent result = %+v", r.AuthKeys)
		}
	}
	e.refuseAuth(e.signingKeyCmd("k1", 2, 0), fsm.CodeInvalid, "signing key k1 exists already")

	// Rotation retires k1 for a grace of ten seconds.
	e.changed(e.signingKeyCmd("k2", 2, 10_000))
	rotated := e.clock
	keys := e.m.State().AuthSigningKeys()
	k1.RetiredAt, k1.RefuseAfter = rotated, rotated+10_000
	k2 := fsm.AuthSigningKey{ID: "k2", Key: signingKey(2, 32), CreatedAt: rotated}
	if !reflect.DeepEqual(keys, []fsm.AuthSigningKey{k1, k2}) {
		t.Fatalf("keys after rotation = %+v", keys)
	}
	if !k1.Usable(rotated) || !k1.Usable(rotated+9_999) || k1.Usable(rotated+10_000) || k1.Usable(rotated+20_000) {
		t.Fatal("a retired key is usable outside its grace")
	}
	if k, ok := e.m.State().AuthSigningKey("k1"); !ok || !reflect.DeepEqual(*k, k1) {
		t.Fatalf("AuthSigningKey(k1) = %+v, %v", k, ok)
	}
	if _, ok := e.m.State().AuthSigningKey("k9"); ok {
		t.Fatal("AuthSigningKey found a key never set")
	}
	for _, id := range []string{"k1", "k2"} {
		e.refuseAuth(e.signingKeyCmd(id, 3, 0), fsm.CodeInvalid, "exists already")
	}

	// A second rotation within k1's grace retires k2, and k1 keeps no
	// longer than k2 does.
	e.changed(e.signingKeyCmd("k3", 3, 1_000))
	k2.RetiredAt, k2.RefuseAfter = e.clock, e.clock+1_000
	k1.RefuseAfter = min(k1.RefuseAfter, e.clock+1_000)
	k3 := fsm.AuthSigningKey{ID: "k3", Key: signingKey(3, 32), CreatedAt: e.clock}
	if keys := e.m.State().AuthSigningKeys(); !reflect.DeepEqual(keys, []fsm.AuthSigningKey{k1, k2, k3}) {
		t.Fatalf("keys after a second rotation = %+v", keys)
	}

	// Past their grace, k1 and k2 are dropped at the next rotation; a
	// rotation without grace retires every older key at once (a key that
	// leaked), so k3 goes too.
	late := e.signingKeyCmd("k4", 4, 0)
	late.Time = rotated + 10_000
	e.clock = late.Time
	e.changed(late)
	k4 := fsm.AuthSigningKey{ID: "k4", Key: signingKey(4, 32), CreatedAt: late.Time}
	if keys := e.m.State().AuthSigningKeys(); !reflect.DeepEqual(keys, []fsm.AuthSigningKey{k4}) {
		t.Fatalf("keys after a late rotation = %+v", keys)
	}
	e.changed(e.signingKeyCmd("k5", 5, 0))
	if got := keyIDsOf(e.m.State().AuthSigningKeys()); !slices.Equal(got, []string{"k5"}) {
		t.Fatalf("keys = %v", got)
	}
	// The id of a dropped key is free again.
	e.changed(e.signingKeyCmd("k1", 6, 0))
	if got := keyIDsOf(e.m.State().AuthSigningKeys()); !slices.Equal(got, []string{"k1"}) {
		t.Fatalf("keys = %v", got)
	}
	// Unpadded URL base64 of 40 bytes is a key too.
	raw := e.signingKeyCmd("k7", 0, 1_000)
	raw.Key = "-_-_" + strings.Repeat("A", 50)
	e.changed(raw)
	// A grace too long to add to the time keeps the key for good rather
	// than wrapping around to a time long past.
	e.changed(e.signingKeyCmd("k8", 8, math.MaxInt64))
	keys = e.m.State().AuthSigningKeys()
	if got := keyIDsOf(keys); !slices.Equal(got, []string{"k7", "k8"}) {
		t.Fatalf("keys = %v", got)
	}
	if k7 := keys[0]; k7.RefuseAfter != math.MaxInt64 || !k7.Usable(1<<62) {
		t.Fatalf("key retired with the longest grace = %+v", k7)
	}
}

// authState builds a state holding every principal, token, grant and key
// entity.
func authState(t *testing.T) (*env, map[string]string) {
	e, keys := grantsEnv(t)
	e.changed(e.bootstrap("opaque-1"))
	e.createPrincipal(userNamed("bob"))
	e.createPrincipal(serviceNamed("etl", "client-1"))
	e.createPrincipal(fsm.Principal{Name: "ops", Type: fsm.PrincipalService, Admin: true, ClientID: "client-2", Secret: secretOf("c2")})
	exp := e.authToken("bob", "tok-bob")
	exp.Token.ExpiresAt = exp.Time + 60_000
	e.changed(exp)
	e.changed(e.authToken("etl", "tok-etl"))
	e.changed(e.authToken("bob", "opaque-2"))
	e.changed(e.grant(fsm.SecurableMetastore, nil, addPriv("ops", fsm.PrivCreateCatalog)))
	e.changed(e.grant(fsm.SecurableCatalog, []string{"unity"}, addPriv("bob", fsm.PrivUseCatalog), addPriv("etl", fsm.PrivAll)))
	e.changed(e.grant(fsm.SecurableSchema, []string{"unity", "default"}, addPriv("bob", fsm.PrivUseSchema, fsm.PrivCreateTable)))
	e.changed(e.grant(fsm.SecurableSchema, []string{"unity", "default", "ns"}, addPriv("etl", fsm.PrivUseSchema)))
	e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect), addPriv("etl", fsm.PrivModify)))
	e.changed(e.grant(fsm.SecurableTable, []string{"unity", "default", "ns", "ice"}, addPriv("bob", fsm.PrivAll)))
	e.changed(e.signingKeyCmd("k1", 1, 3_600_000))
	e.changed(e.signingKeyCmd("k2", 2, 1_000))
	return e, keys
}

// sameAuthState checks that two states answer every principal, token,
// grant and key lookup identically.
func sameAuthState(t *testing.T, a, b *fsm.State, keys map[string]string) {
	t.Helper()
	eq := func(what string, x, y any) {
		t.Helper()
		if jx, jy := jsonOf(t, x), jsonOf(t, y); jx != jy {
			t.Fatalf("%s differs:\n%s\n%s", what, jx, jy)
		}
	}
	eq("principals", a.Principals("", 0), b.Principals("", 0))
	eq("principal page", a.Principals("bob", 1), b.Principals("bob", 1))
	for _, id := range []string{"client-1", "client-2", "client-3", ""} {
		pa, oka := a.PrincipalByClientID(id)
		pb, okb := b.PrincipalByClientID(id)
		eq("client "+id, []any{pa, oka}, []any{pb, okb})
	}
	for _, id := range []string{"opaque-1", "opaque-2", "tok-bob", "tok-etl", "nope"} {
		ka, oka := a.AuthToken(id)
		kb, okb := b.AuthToken(id)
		eq("token "+id, []any{ka, oka}, []any{kb, okb})
	}
	eq("opaque tokens", a.OpaqueTokens(), b.OpaqueTokens())
	eq("has admin", a.HasAdmin(), b.HasAdmin())
	eq("metastore key", a.MetastoreKey(), b.MetastoreKey())
	for name, key := range keys {
		eq("grants on "+name, a.Grants(key), b.Grants(key))
	}
	eq("signing keys", a.AuthSigningKeys(), b.AuthSigningKeys())
	eq("object counts", a.ObjectCounts(), b.ObjectCounts())
}

func TestAuthSnapshotRoundTrip(t *testing.T) {
	e, keys := authState(t)
	st := e.m.State()
	b := fsm.NewBuilder()
	kinds := map[byte]int{}
	if err := st.WriteRecords(func(kind byte, payload []byte) error {
		kinds[kind]++
		return b.Add(kind, payload)
	}); err != nil {
		t.Fatal(err)
	}
	for kind, n := range map[byte]int{fsm.RecordPrincipal: 4, fsm.RecordAuthToken: 4, fsm.RecordGrants: 6, fsm.RecordAuthSigningKeys: 1} {
		if kinds[kind] != n {
			t.Fatalf("%d records of kind %d, want %d (%v)", kinds[kind], kind, n, kinds)
		}
	}
	restored := b.State()
	if restored.Digest() != st.Digest() {
		t.Fatal("restored digest differs")
	}
	data := writeState(t, st, e.lastIndex())
	viaSnapshot, _, err := snapshot.ReadState(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if again := writeState(t, viaSnapshot, e.lastIndex()); !bytes.Equal(again, data) {
		t.Fatal("the restored state serialises differently")
	}
	for _, r := range []*fsm.State{restored, viaSnapshot} {
		sameAuthState(t, st, r, keys)
		if p, ok := r.PrincipalByClientID("client-2"); !ok || p.Name != "ops" || !p.Admin {
			t.Fatalf("PrincipalByClientID after restore = %+v, %v", p, ok)
		}
	}
	if got := restored.AuthSigningKeys(); len(got) != 2 || got[0].RetiredAt == 0 || got[1].RetiredAt != 0 {
		t.Fatalf("keys after restore = %+v", got)
	}

	// The restored state enforces what the original does.
	r := &env{t: t, m: fsm.NewMachine(), next: e.next, clock: e.clock, ids: e.ids}
	r.m.Replace(viaSnapshot)
	r.refuseAuth(&fsm.CreatePrincipal{Stamp: r.st(), Principal: serviceNamed("etl-2", "client-1")}, fsm.CodeInvalid, "client id is already in use")
	r.refuseAuth(r.authToken("bob", "tok-etl"), fsm.CodeInvalid, "token id is already in use")
	r.refuseAuth(r.signingKeyCmd("k1", 9, 0), fsm.CodeInvalid, "exists already")
	r.noop(r.bootstrap("opaque-9"))
	r.noop(r.grant(fsm.SecurableTable, []string{"unity", "default", "events"}, addPriv("bob", fsm.PrivSelect)))
	del := &fsm.DeletePrincipal{Stamp: r.st(), Name: "etl"}
	r.changed(del)
	after := r.m.State()
	if _, ok := after.AuthToken("tok-etl"); ok {
		t.Fatal("a restored principal's token outlived it")
	}
	if _, ok := after.PrincipalByClientID("client-1"); ok {
		t.Fatal("a restored principal's client id outlived it")
	}
	for name, key := range keys {
		for _, a := range after.Grants(key) {
			if a.Principal == "etl" {
				t.Fatalf("etl keeps grants on %s after its deletion", name)
			}
		}
	}
	// The same command on the original gives the same state.
	e.changed(del)
	if e.m.State().Digest() != after.Digest() {
		t.Fatal("original and restored states diverged")
	}
}

func TestAuthCommandsRoundTrip(t *testing.T) {
	st := fsm.Stamp{Time: 5, Caller: "a", Rules: fsm.CurrentRules}
	cmds := []fsm.Command{
		&fsm.CreatePrincipal{Stamp: st, IfNoAdmin: true, Principal: fsm.Principal{Name: "p", Type: fsm.PrincipalService, Admin: true,
			ClientID: "c", Secret: secretOf("s"), CreatedAt: 1, CreatedBy: "b"},
			Token: &fsm.AuthToken{ID: "i", Principal: "p", Secret: *secretOf("t"), ExpiresAt: 9, CreatedAt: 1, CreatedBy: "b"}},
		&fsm.DeletePrincipal{Stamp: st, Name: "p"},
		&fsm.CreateAuthToken{Stamp: st, Token: fsm.AuthToken{ID: "i", Principal: "p", Secret: *secretOf("t"), ExpiresAt: 9}},
		&fsm.RevokeAuthToken{Stamp: st, ID: "i"},
		&fsm.UpdatePermissions{Stamp: st, SecurableType: fsm.SecurableTable, Path: []string{"a", "b", "c"},
			Changes: []fsm.PermissionChange{{Principal: "p", Add: []string{fsm.PrivSelect}, Remove: []string{fsm.PrivModify}}}},
		&fsm.SetAuthSigningKey{Stamp: st, ID: "k", Key: "key", GraceMs: 7, IfAbsent: true},
	}
	for i, c := range cmds {
		if want := fsm.CmdCreatePrincipal + fsm.CommandType(i); c.Type() != want {
			t.Fatalf("%T has type %d, want %d", c, c.Type(), want)
		}
		b, err := fsm.EncodeChecked(c)
		if err != nil {
			t.Fatalf("encode %T: %v", c, err)
		}
		got, err := fsm.Decode(b)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("%T round trip: %+v, %v", c, got, err)
		}
	}
}
