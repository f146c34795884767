// Package access decides what a principal may do, in Unity Catalog's
// model, from the replicated state: the metastore admin may do anything;
// the owner of an object may do anything to it and to everything below
// it; otherwise a privilege is held when it (or ALL PRIVILEGES) is
// granted on the object or on any container above it, and using anything
// inside a catalog or a schema takes USE CATALOG and USE SCHEMA on the
// way down. The package reads the state and decides; it never changes
// anything, and the same state always gives the same verdict.
package access

import (
	"fmt"
	"strings"

	"github.com/raftcat/raftcat/fsm"
)

// Need is one thing a request needs: a privilege on a securable, or its
// ownership.
type Need struct {
	// Path names the securable: nothing for the metastore; a catalog;
	// a catalog, a schema and any namespaces below it; then, when Table
	// is set, the table's name.
	Path  []string
	Table bool
	// Priv is the privilege needed (fsm.Priv*), unless Owner is set.
	Priv  string
	Owner bool

	// Objects outside the namespace tree: the owner of a Delta Sharing
	// share or recipient, the principal itself, or the owner of an API
	// token. When one is set, Path and Priv are not used.
	Share, Recipient, Self, Token string
}

// ShareOwner is the need of owning a share.
func ShareOwner(name string) Need { return Need{Share: name} }

// RecipientOwner is the need of owning a recipient.
func RecipientOwner(name string) Need { return Need{Recipient: name} }

// Self is the need of being the principal named.
func Self(principal string) Need { return Need{Self: principal} }

// TokenOwner is the need of being the principal an API token belongs to.
func TokenOwner(id string) Need { return Need{Token: id} }

// On is the need of priv on the securable at path.
func On(priv string, path ...string) Need { return Need{Path: path, Priv: priv} }

// OnTable is the need of priv on the table at path (namespace, then name).
func OnTable(priv string, path ...string) Need { return Need{Path: path, Table: true, Priv: priv} }

// OwnerOf is the need of owning the securable at path.
func OwnerOf(table bool, path ...string) Need { return Need{Path: path, Table: table, Owner: true} }

// String names the need as a denial says it.
func (n Need) String() string {
	switch {
	case n.Share != "":
		return "ownership of share " + n.Share
	case n.Recipient != "":
		return "ownership of recipient " + n.Recipient
	case n.Self != "":
		return "the identity of principal " + n.Self
	case n.Token != "":
		return "ownership of token " + n.Token
	}
	what := "the metastore"
	if len(n.Path) > 0 {
		what = fmt.Sprintf("%s %s", n.securableType(), strings.Join(n.Path, "."))
	}
	if n.Owner {
		return "ownership of " + what
	}
	return n.Priv + " on " + what
}

func (n Need) securableType() string {
	switch {
	case n.Table:
		return fsm.SecurableTable
	case len(n.Path) == 0:
		return fsm.SecurableMetastore
	case len(n.Path) == 1:
		return fsm.SecurableCatalog
	}
	return fsm.SecurableSchema
}

// IsAdmin reports whether principal is a metastore admin.
func IsAdmin(st *fsm.State, principal string) bool {
	p, ok := st.Principal(principal)
	return ok && p.Admin
}

// Check returns nil when principal holds what n needs, else an error
// naming what is missing (a *fsm.Error of CodePermissionDenied).
func Check(st *fsm.State, principal string, n Need) error {
	if IsAdmin(st, principal) || allows(st, principal, n) {
		return nil
	}
	missing := n
	if n.Share == "" && n.Recipient == "" && n.Self == "" && n.Token == "" {
		if use, ok := newChain(st, n).missingUse(principal, n); ok {
			missing = use
		}
	}
	return fsm.Errf(fsm.CodePermissionDenied, "Principal %s does not have %s.", principal, missing)
}

// Allowed is Check as a boolean.
func Allowed(st *fsm.State, principal string, n Need) bool { return Check(st, principal, n) == nil }

// allows decides a need for a principal that is not an admin. An object
// that does not exist is allowed: the request then fails for what is
// missing, as it would for anyone.
func allows(st *fsm.State, principal string, n Need) bool {
	// An empty owner (an object made by an anonymous caller) is nobody's,
	// as in the namespace tree.
	is := func(owner string) bool { return owner != "" && owner == principal }
	switch {
	case n.Share != "":
		sh, ok := st.Share(n.Share)
		return !ok || is(sh.Owner)
	case n.Recipient != "":
		r, ok := st.Recipient(n.Recipient)
		return !ok || is(r.Owner)
	case n.Self != "":
		return is(n.Self)
	case n.Token != "":
		k, ok := st.AuthToken(n.Token)
		return !ok || is(k.Principal)
	}
	return newChain(st, n).allows(principal, n)
}

// level is one existing object on the way from the metastore to a
// securable.
type level struct {
	key   string // securable key of its grants
	owner string
	use   string // the USE privilege entering it takes ("" for the metastore and tables)
}

// chain is the objects from the metastore down to the securable that
// exist; missing tells that the path named more than exists.
type chain struct {
	st      *fsm.State
	levels  []level
	missing bool
}

func newChain(st *fsm.State, n Need) *chain {
	ch := &chain{st: st, levels: []level{{key: st.MetastoreKey()}}}
	ns := n.Path
	if n.Table && len(ns) > 0 {
		ns = ns[:len(ns)-1]
	}
	for i := 1; i <= len(ns); i++ {
		o, ok := st.Namespace(ns[:i])
		if !ok {
			ch.missing = true
			return ch
		}
		use, typ := fsm.PrivUseSchema, fsm.SecurableSchema
		if i == 1 {
			use, typ = fsm.PrivUseCatalog, fsm.SecurableCatalog
		}
		ch.levels = append(ch.levels, level{key: fsm.SecurableKey(typ, o.ID), owner: o.Owner, use: use})
	}
	if n.Table && len(n.Path) >= 3 {
		if tb, ok := st.TableIn(ns, n.Path[len(n.Path)-1]); ok {
			ch.levels = append(ch.levels, level{key: fsm.SecurableKey(fsm.SecurableTable, tb.ID), owner: tb.Owner})
		} else {
			ch.missing = true
		}
	}
	return ch
}

// allows decides n for principal over the chain. A path that names
// containers that do not exist is allowed: the request then fails for
// what is missing, as it would for anyone.
func (ch *chain) allows(principal string, n Need) bool {
	depth := len(n.Path) + 1 // levels the full path would have
	if ch.missing && (n.Owner || len(ch.levels) < depth-boolInt(n.Table)) {
		return true
	}
	for i := 1; i < len(ch.levels); i++ { // USE on every container entered
		if l := ch.levels[i]; l.use != "" && !ch.holds(principal, i, l.use) {
			return false
		}
	}
	last := len(ch.levels) - 1
	if n.Owner {
		return ch.owns(principal, last)
	}
	return ch.holds(principal, last, n.Priv)
}

// missingUse is the first USE privilege the principal lacks on the way
// down, if any: what a denial names first.
func (ch *chain) missingUse(principal string, n Need) (Need, bool) {
	for i := 1; i < len(ch.levels); i++ {
		if l := ch.levels[i]; l.use != "" && !ch.holds(principal, i, l.use) {
			return Need{Path: n.Path[:i], Priv: l.use}, true
		}
	}
	return Need{}, false
}

// holds reports whether principal holds priv at level i: by owning it or
// a container above it, or by a grant on it or above it.
func (ch *chain) holds(principal string, i int, priv string) bool {
	if ch.owns(principal, i) {
		return true
	}
	for j := 0; j <= i; j++ {
		if ch.st.HasPrivilege(ch.levels[j].key, principal, priv) {
			return true
		}
	}
	return false
}

func (ch *chain) owns(principal string, i int) bool {
	for j := 1; j <= i; j++ {
		if o := ch.levels[j].owner; o != "" && o == principal {
			return true
		}
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Visible reports whether a list shows the securable at path to
// principal: a container when the principal may use it, a table when the
// principal may read or change it.
func Visible(st *fsm.State, principal string, table bool, path ...string) bool {
	if !table {
		use := fsm.PrivUseSchema
		if len(path) == 1 {
			use = fsm.PrivUseCatalog
		}
		return Allowed(st, principal, Need{Path: path, Priv: use})
	}
	return Allowed(st, principal, OnTable(fsm.PrivSelect, path...)) || Allowed(st, principal, OnTable(fsm.PrivModify, path...))
}
