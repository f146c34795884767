package testcluster

import (
	"context"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/auth"
)

// propose applies a command through the leader and fails the test on any
// error, the command's own included.
func propose(t testing.TB, nodes []*Node, cmd fsm.Command) fsm.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, _, err := Leader(t, nodes).Propose(ctx, cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("propose %T: %v", cmd, err)
	}
	return res
}

// NewUser creates a user principal with one API token and returns the
// token's text.
func NewUser(t testing.TB, nodes []*Node, name string) string {
	t.Helper()
	text, tok := auth.NewToken(name, 0, time.Now())
	propose(t, nodes, &fsm.CreatePrincipal{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()},
		Principal: fsm.Principal{Name: name, Type: fsm.PrincipalUser}, Token: &tok})
	return text
}

// Grant adds privileges of principal on a securable (fsm.Securable*; the
// path names it as fsm.UpdatePermissions says).
func Grant(t testing.TB, nodes []*Node, securableType string, path []string, principal string, privs ...string) {
	t.Helper()
	propose(t, nodes, &fsm.UpdatePermissions{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()}, SecurableType: securableType,
		Path: path, Changes: []fsm.PermissionChange{{Principal: principal, Add: privs}}})
}

// Revoke removes privileges of principal on a securable.
func Revoke(t testing.TB, nodes []*Node, securableType string, path []string, principal string, privs ...string) {
	t.Helper()
	propose(t, nodes, &fsm.UpdatePermissions{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()}, SecurableType: securableType,
		Path: path, Changes: []fsm.PermissionChange{{Principal: principal, Remove: privs}}})
}

// Bearer is the header pair of a bearer token, for Do.
func Bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }
