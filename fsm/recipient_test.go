package fsm_test

import (
	"bytes"
	"encoding/base64"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

func (e *env) createRecipient(name, activation string, expiration int64) *fsm.Recipient {
	e.t.Helper()
	return e.changed(&fsm.CreateRecipient{Stamp: e.st(), ID: e.newID("rcp"), Name: name, TokenID: e.newID("tok"),
		ActivationHash: activation, ExpirationTime: expiration}).Recipient
}

func (e *env) activate(activation, bearer string) *fsm.ActivateRecipientToken {
	return &fsm.ActivateRecipientToken{Stamp: e.st(), ActivationHash: activation, BearerHash: bearer}
}

func (e *env) rotate(name string, seconds int64, activation string) *fsm.RotateRecipientToken {
	return &fsm.RotateRecipientToken{Stamp: e.st(), Name: name, ExistingTokenExpireInSeconds: seconds,
		TokenID: e.newID("tok"), ActivationHash: activation}
}

func (e *env) recipient(name string) *fsm.Recipient {
	e.t.Helper()
	r, ok := e.m.State().Recipient(name)
	if !ok {
		e.t.Fatalf("recipient %s not found", name)
	}
	return r
}

func tokenIDs(r *fsm.Recipient) []string {
	var out []string
	for _, k := range r.Tokens {
		out = append(out, k.ID)
	}
	return out
}

func TestCreateRecipient(t *testing.T) {
	e := newEnv(t)
	res := e.changed(&fsm.CreateRecipient{Stamp: e.st(), ID: "r1", Name: "Acme", Comment: ptr("partner"),
		TokenID: "t1", ActivationHash: "a1", ExpirationTime: e.clock + 1})
	now := e.clock
	want := &fsm.Recipient{ID: "r1", Name: "Acme", Comment: ptr("partner"), AuthenticationType: "TOKEN", Owner: owner,
		CreatedAt: now, CreatedBy: owner, UpdatedAt: now, Tokens: []fsm.RecipientToken{{ID: "t1", ActivationHash: "a1",
			CreatedAt: now, CreatedBy: owner, ExpirationTime: now + 1, UpdatedAt: now}}}
	if !reflect.DeepEqual(res.Recipient, want) {
		t.Fatalf("recipient = %+v, want %+v", res.Recipient, want)
	}
	st := e.m.State()
	if r, ok := st.Recipient("ACME"); !ok || r.ID != "r1" {
		t.Fatalf("Recipient(ACME) = %+v, %v", r, ok)
	}
	if r, k, ok := st.RecipientByActivation("a1"); !ok || r.ID != "r1" || k.ID != "t1" {
		t.Fatalf("RecipientByActivation = %+v, %+v, %v", r, k, ok)
	}
	if _, _, ok := st.RecipientByBearer("a1"); ok {
		t.Fatal("an activation hash found as a bearer hash")
	}
	create := func(name, auth, act string, exp int64) *fsm.CreateRecipient {
		return &fsm.CreateRecipient{Stamp: e.st(), ID: "x", Name: name, AuthenticationType: auth, TokenID: "t", ActivationHash: act, ExpirationTime: exp}
	}
	e.refuse(create("acme", "", "a2", 0), fsm.CodeRecipientExists, "Recipient already exists: acme")
	e.refuse(create("b", "OAUTH", "a2", 0), fsm.CodeInvalid, "only TOKEN")
	e.refuse(create("b c", "", "a2", 0), fsm.CodeInvalid, "Invalid recipient name")
	e.refuse(create("b", "", "a1", 0), fsm.CodeInvalid, "activation hash is already in use")
	e.refuse(create("b", "", "", 0), fsm.CodeInvalid, "needs an id and an activation hash")
	e.refuse(create("b", "", "a2", e.clock+1000), fsm.CodeInvalid, "must be in the future") // the stamp is a second on
	if r := e.changed(create("b", "token", "a2", 0)).Recipient; r.AuthenticationType != "TOKEN" {
		t.Fatalf("authentication type %q", r.AuthenticationType)
	}
	var names []string
	for _, r := range e.m.State().Recipients("", 0) {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"Acme", "b"}) {
		t.Fatalf("recipients %v", names)
	}
	if rs := e.m.State().Recipients("ACME", 5); len(rs) != 1 || rs[0].Name != "b" {
		t.Fatalf("recipients after ACME: %+v", rs)
	}
}

func TestActivateRecipientTokenOnce(t *testing.T) {
	e := newEnv(t)
	e.createRecipient("acme", "a1", 0)
	e.refuse(e.activate("nope", "b1"), fsm.CodeRecipientNotFound, "activation link is not valid")
	e.refuse(e.activate("a1", ""), fsm.CodeInvalid, "needs the activation and bearer hashes")
	res := e.changed(e.activate("a1", "b1"))
	k := res.Recipient.Tokens[0]
	if k.BearerHash != "b1" || k.ActivatedAt != e.clock || k.UpdatedAt != e.clock {
		t.Fatalf("token = %+v", k)
	}
	st := e.m.State()
	if r, k, ok := st.RecipientByBearer("b1"); !ok || r.Name != "acme" || k.ActivationHash != "a1" {
		t.Fatalf("RecipientByBearer = %+v, %+v, %v", r, k, ok)
	}
	if _, k, ok := st.RecipientByActivation("a1"); !ok || k.BearerHash != "b1" {
		t.Fatalf("RecipientByActivation after activation = %+v, %v", k, ok)
	}
	e.refuse(e.activate("a1", "b2"), fsm.CodeActivationUsed, "already been downloaded")
	e.refuse(e.activate("a1", "b1"), fsm.CodeActivationUsed, "already been downloaded")

	// A bearer hash is one token's only.
	e.createRecipient("other", "a2", 0)
	e.refuse(e.activate("a2", "b1"), fsm.CodeInvalid, "bearer hash is already in use")

	// An expired activation link is refused.
	e.createRecipient("late", "a3", e.clock+1500)
	e.changed(&fsm.CreateShare{Stamp: e.st(), ID: "s", Name: "s"}) // time passes
	e.refuse(e.activate("a3", "b3"), fsm.CodePermissionDenied, "has expired")
}

func TestRecipientTokenExpiredAt(t *testing.T) {
	k := fsm.RecipientToken{}
	if k.ExpiredAt(1 << 62) {
		t.Fatal("a token without expiration expired")
	}
	k.ExpirationTime = 100
	if k.ExpiredAt(99) || !k.ExpiredAt(100) || !k.ExpiredAt(101) {
		t.Fatal("ExpiredAt is not now >= ExpirationTime")
	}
}

func TestRotateRecipientToken(t *testing.T) {
	e := newEnv(t)
	e.createRecipient("acme", "a1", 0)
	e.changed(e.activate("a1", "b1"))
	e.refuse(e.rotate("acme", -1, "a2"), fsm.CodeInvalid, "existing_token_expire_in_seconds -1")
	e.refuse(e.rotate("nobody", 0, "a2"), fsm.CodeRecipientNotFound, "Recipient not found: nobody")
	e.refuse(e.rotate("acme", 0, "a1"), fsm.CodeInvalid, "activation hash is already in use")

	// The old token lives on for an hour beside the new one.
	res := e.changed(e.rotate("ACME", 3600, "a2"))
	now := e.clock
	r := res.Recipient
	if len(r.Tokens) != 2 || r.Tokens[0].ExpirationTime != now+3600_000 || r.Tokens[0].UpdatedAt != now ||
		r.Tokens[1].ActivationHash != "a2" || r.Tokens[1].ExpirationTime != 0 || r.UpdatedAt != now {
		t.Fatalf("after rotation: %+v", r)
	}
	if _, _, ok := e.m.State().RecipientByBearer("b1"); !ok {
		t.Fatal("the old token no longer authenticates")
	}
	// Two tokens alive: a third is refused unless the others expire now.
	e.refuse(e.rotate("acme", 60, "a3"), fsm.CodeInvalid, "already has two active tokens")
	res = e.changed(e.rotate("acme", 0, "a3"))
	now = e.clock
	if got := tokenIDs(res.Recipient); len(got) != 3 {
		t.Fatalf("tokens %v", got)
	}
	for _, k := range res.Recipient.Tokens[:2] {
		if k.ExpirationTime != now || !k.ExpiredAt(now) {
			t.Fatalf("old token not expired now: %+v", k)
		}
	}
	// The next rotation drops the expired tokens and their hashes.
	res = e.changed(e.rotate("acme", 10, "a4"))
	if got := res.Recipient.Tokens; len(got) != 2 || got[0].ActivationHash != "a3" || got[1].ActivationHash != "a4" {
		t.Fatalf("tokens %+v", got)
	}
	st := e.m.State()
	for _, h := range []string{"a1", "a2"} {
		if _, _, ok := st.RecipientByActivation(h); ok {
			t.Fatalf("dropped token %s still indexed", h)
		}
	}
	if _, _, ok := st.RecipientByBearer("b1"); ok {
		t.Fatal("dropped token's bearer hash still indexed")
	}
	// A token's own, earlier expiration is kept.
	e.createRecipient("soon", "s1", e.clock+5000)
	exp := e.clock + 4000
	res = e.changed(e.rotate("soon", 3600, "s2"))
	if k := res.Recipient.Tokens[0]; k.ExpirationTime != exp {
		t.Fatalf("own expiration %d replaced by %d", exp, k.ExpirationTime)
	}
	// A rotation with a new token that expires too early is refused whole.
	c := e.rotate("soon", 0, "s3")
	c.ExpirationTime = c.Time
	e.refuse(c, fsm.CodeInvalid, "must be in the future")
	c = e.rotate("soon", 0, "s3")
	c.TokenID = res.Recipient.Tokens[1].ID
	e.refuse(c, fsm.CodeInvalid, "already has a token")
}

func TestDeleteRecipientRevokesGrants(t *testing.T) {
	e := newEnv(t)
	e.createRecipient("Bob", "a-bob", 0)
	e.createRecipient("carol", "a-carol", 0)
	e.changed(e.activate("a-bob", "b-bob"))
	for _, s := range []string{"s1", "s2", "s3"} {
		e.createShare(s)
	}
	grants := func(share string, ps ...string) {
		c := &fsm.UpdateSharePermissions{Stamp: e.st(), Share: share}
		for _, p := range ps {
			c.Changes = append(c.Changes, fsm.PermissionChange{Principal: p, Add: []string{"SELECT"}})
		}
		e.changed(c)
	}
	grants("s1", "bob", "carol")
	grants("s3", "bob")
	grants("s2", "carol")
	s1 := e.share("s1")
	res := e.changed(&fsm.DeleteRecipient{Stamp: e.st(), Name: "BOB"})
	if res.Recipient.Name != "Bob" {
		t.Fatalf("deleted %+v", res.Recipient)
	}
	st := e.m.State()
	for share, want := range map[string][]string{"s1": {"carol"}, "s2": {"carol"}, "s3": nil} {
		if got := e.share(share).Grants; !slices.Equal(got, want) {
			t.Fatalf("%s grants = %v, want %v", share, got, want)
		}
	}
	if s1.Grants[0] != "Bob" {
		t.Fatal("revoking changed the stored share in place")
	}
	if _, ok := st.Recipient("bob"); ok {
		t.Fatal("recipient still there")
	}
	if _, _, ok := st.RecipientByBearer("b-bob"); ok {
		t.Fatal("bearer hash of a deleted recipient still found")
	}
	if _, _, ok := st.RecipientByActivation("a-bob"); ok {
		t.Fatal("activation hash of a deleted recipient still found")
	}
	if got := st.SharesGrantedTo("bob"); len(got) != 0 {
		t.Fatalf("granted to deleted bob: %v", shareNames(got))
	}
	e.refuse(&fsm.DeleteRecipient{Stamp: e.st(), Name: "bob"}, fsm.CodeRecipientNotFound, "Recipient not found: bob")
	// A new Bob inherits nothing, and the hashes are free again.
	e.createRecipient("bob", "a-bob", 0)
	if got := st.SharesGrantedTo("bob"); len(got) != 0 {
		t.Fatalf("granted to new bob: %v", shareNames(got))
	}
}

func signingKey(b byte, n int) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n))
}

func TestSetURLSigningKey(t *testing.T) {
	e := newEnv(t)
	if _, ok := e.m.State().URLSigningKey(); ok {
		t.Fatal("a key before any was set")
	}
	for _, bad := range []string{"", "not base64!", signingKey(1, 31)} {
		e.refuse(&fsm.SetURLSigningKey{Stamp: e.st(), Key: bad}, fsm.CodeInvalid, "at least 32 bytes")
	}
	res := e.changed(&fsm.SetURLSigningKey{Stamp: e.st(), Key: signingKey(1, 32), IfAbsent: true})
	want := &fsm.URLSigningKey{Key: signingKey(1, 32), Index: e.lastIndex(), CreatedAt: e.clock}
	if !reflect.DeepEqual(res.SigningKey, want) {
		t.Fatalf("key = %+v, want %+v", res.SigningKey, want)
	}
	if b, err := res.SigningKey.Bytes(); err != nil || !bytes.Equal(b, bytes.Repeat([]byte{1}, 32)) {
		t.Fatalf("Bytes = %v, %v", b, err)
	}
	// A second node racing to create the first key changes nothing.
	res = e.noop(&fsm.SetURLSigningKey{Stamp: e.st(), Key: signingKey(2, 32), IfAbsent: true})
	if got, _ := e.m.State().URLSigningKey(); !reflect.DeepEqual(got, want) || res.SigningKey.Key != want.Key {
		t.Fatalf("key after IfAbsent = %+v (result %+v)", got, res.SigningKey)
	}
	// Rotation replaces it; unpadded URL base64 is accepted.
	raw := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 40))
	res = e.changed(&fsm.SetURLSigningKey{Stamp: e.st(), Key: raw})
	if got, _ := e.m.State().URLSigningKey(); got.Key != raw || got.Index != e.lastIndex() || got.Index == want.Index {
		t.Fatalf("rotated key = %+v", got)
	}
}

// sharingState builds a state holding every sharing entity.
func sharingState(t *testing.T) *env {
	e := newEnv(t)
	e.createExternal("unity", "default", "events")
	e.createShare("Sales")
	e.changed(e.addToShare("sales", fsm.SharedObject{Name: "unity.default.events", SharedAs: "s.e", Comment: ptr("c")}))
	e.createRecipient("Acme", "a1", 0)
	e.createRecipient("beta", "a2", e.clock+100_000)
	e.changed(e.activate("a1", "b1"))
	e.changed(e.rotate("acme", 60, "a3"))
	e.changed(&fsm.UpdateSharePermissions{Stamp: e.st(), Share: "sales",
		Changes: []fsm.PermissionChange{{Principal: "acme", Add: []string{"SELECT"}}, {Principal: "BETA", Add: []string{"SELECT"}}}})
	e.changed(&fsm.SetURLSigningKey{Stamp: e.st(), Key: signingKey(7, 32)})
	return e
}

func TestSharingSnapshotRoundTrip(t *testing.T) {
	e := sharingState(t)
	st := e.m.State()
	b := fsm.NewBuilder()
	var kinds []byte
	if err := st.WriteRecords(func(kind byte, payload []byte) error {
		kinds = append(kinds, kind)
		return b.Add(kind, payload)
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []byte{fsm.RecordShare, fsm.RecordRecipient, fsm.RecordRecipient, fsm.RecordURLSigningKey} {
		if !bytes.Contains(kinds, []byte{k}) {
			t.Fatalf("record kinds %v lack %d", kinds, k)
		}
	}
	restored := b.State()
	if restored.Digest() != st.Digest() {
		t.Fatal("restored digest differs")
	}
	viaSnapshot, _, err := snapshot.ReadState(bytes.NewReader(writeState(t, st, e.lastIndex())))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*fsm.State{restored, viaSnapshot} {
		g := &logGen{activations: []string{"a1", "a2", "a3", "zz"}, bearers: []string{"b1", "zz"}}
		sameSharingAnswers(t, st, r, g)
		if rc, k, ok := r.RecipientByBearer("b1"); !ok || rc.Name != "Acme" || k.ActivationHash != "a1" {
			t.Fatalf("RecipientByBearer after restore = %+v, %+v, %v", rc, k, ok)
		}
		if got := shareNames(r.SharesGrantedTo("ACME")); !slices.Equal(got, []string{"Sales"}) {
			t.Fatalf("granted to acme after restore: %v", got)
		}
	}
	// The restored indexes enforce what the original's do.
	m := fsm.NewMachine()
	m.Replace(restored)
	apply := func(c fsm.Command) fsm.Result {
		data, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Apply(e.next, data)
		if err != nil {
			t.Fatal(err)
		}
		e.next++
		return res
	}
	if res := apply(e.activate("a1", "b9")); res.Err == nil || res.Err.Code != fsm.CodeActivationUsed {
		t.Fatalf("second activation after restore: %+v", res)
	}
	if res := apply(e.activate("a2", "b1")); res.Err == nil || !strings.Contains(res.Err.Message, "bearer hash is already in use") {
		t.Fatalf("activation with a bearer hash in use after restore: %+v", res)
	}
	if res := apply(e.activate("a3", "b3")); res.Err != nil {
		t.Fatalf("activation after restore: %+v", res.Err)
	}
	if _, _, ok := m.State().RecipientByBearer("b3"); !ok {
		t.Fatal("bearer hash set after restore not found")
	}
}

func TestSharingCommandsRoundTrip(t *testing.T) {
	st := fsm.Stamp{Time: 5, Caller: "a", Rules: fsm.CurrentRules}
	cmds := []fsm.Command{
		&fsm.CreateShare{Stamp: st, ID: "i", Name: "n", Comment: ptr("c")},
		&fsm.UpdateShare{Stamp: st, Name: "n", Comment: ptr(""), Updates: []fsm.ShareUpdate{{Action: "ADD",
			Object: fsm.SharedObject{Name: "a.b.c", SharedAs: "b.c", HistoryDataSharingStatus: "ENABLED", StartVersion: 2, Comment: ptr("x")}}}},
		&fsm.DeleteShare{Stamp: st, Name: "n"},
		&fsm.UpdateSharePermissions{Stamp: st, Share: "n", Changes: []fsm.PermissionChange{{Principal: "p", Add: []string{"SELECT"}, Remove: []string{"SELECT"}}}},
		&fsm.CreateRecipient{Stamp: st, ID: "i", Name: "r", Comment: ptr("c"), AuthenticationType: "TOKEN", TokenID: "t", ActivationHash: "h", ExpirationTime: 9},
		&fsm.DeleteRecipient{Stamp: st, Name: "r"},
		&fsm.RotateRecipientToken{Stamp: st, Name: "r", ExistingTokenExpireInSeconds: 3, TokenID: "t", ActivationHash: "h", ExpirationTime: 9},
		&fsm.ActivateRecipientToken{Stamp: st, ActivationHash: "h", BearerHash: "b"},
		&fsm.SetURLSigningKey{Stamp: st, Key: "k", IfAbsent: true},
	}
	for i, c := range cmds {
		if want := fsm.CmdCreateShare + fsm.CommandType(i); c.Type() != want {
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
