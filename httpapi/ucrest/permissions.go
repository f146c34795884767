package ucrest

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// Unity Catalog's permissions API: who holds which privileges on a
// securable (GET), and granting and revoking them (PATCH). Only the
// securable's owner (of it or of a container above it) and metastore
// admins may read or change its grants.

const permissionsPath = "/permissions/:securable_type/:full_name"

// permissionsRule needs ownership of the securable named in the path; the
// metastore has no owner, so its grants are the admins'.
var permissionsRule = httpapi.Needs(func(c echo.Context) ([]access.Need, error) {
	typ, path, err := securableOf(c)
	if err != nil {
		return nil, err
	}
	return []access.Need{access.OwnerOf(typ == fsm.SecurableTable, path...)}, nil
})

// securableOf reads the securable type and the path of its full name.
func securableOf(c echo.Context) (string, []string, error) {
	typ := strings.ToLower(c.Param("securable_type"))
	full := c.Param("full_name")
	if fsm.Grantable(typ) == nil {
		return "", nil, httpapi.Invalid("Unsupported securable_type %q: it must be metastore, catalog, schema or table.", httpapi.Clip(typ))
	}
	if typ == fsm.SecurableMetastore {
		return typ, nil, nil
	}
	path := strings.Split(full, ".")
	least := map[string]int{fsm.SecurableCatalog: 1, fsm.SecurableSchema: 2, fsm.SecurableTable: 3}[typ]
	if len(path) < least || (typ == fsm.SecurableCatalog && len(path) != 1) || strings.Contains("."+full+".", "..") {
		return "", nil, httpapi.Invalid("Invalid %s full name: %q", typ, httpapi.Clip(full))
	}
	return typ, path, nil
}

type privilegeAssignment struct {
	Principal  string   `json:"principal"`
	Privileges []string `json:"privileges"`
}

type permissionsList struct {
	PrivilegeAssignments []privilegeAssignment `json:"privilege_assignments"`
}

func toPermissions(as []fsm.PrivilegeAssignment) permissionsList {
	out := permissionsList{PrivilegeAssignments: []privilegeAssignment{}}
	for _, a := range as {
		out.PrivilegeAssignments = append(out.PrivilegeAssignments, privilegeAssignment{Principal: a.Principal, Privileges: a.Privileges})
	}
	return out
}

func (s *server) getPermissions(c echo.Context) error {
	typ, path, err := securableOf(c)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	key, ferr := st.SecurableKeyOf(typ, path)
	if ferr != nil {
		return ferr
	}
	as := st.Grants(key)
	if p := c.QueryParam("principal"); p != "" {
		var only []fsm.PrivilegeAssignment
		for _, a := range as {
			if a.Principal == p {
				only = append(only, a)
			}
		}
		as = only
	}
	return c.JSON(http.StatusOK, toPermissions(as))
}

type permissionsChange struct {
	Principal *string  `json:"principal"`
	Add       []string `json:"add"`
	Remove    []string `json:"remove"`
}

type updatePermissionsReq struct {
	Changes []permissionsChange `json:"changes"`
}

func buildUpdatePermissions(in *httpapi.In[updatePermissionsReq]) (*fsm.UpdatePermissions, error) {
	typ, path, err := securableOf(in.Context)
	if err != nil {
		return nil, err
	}
	if !in.Found || len(in.Body.Changes) == 0 {
		return nil, httpapi.Invalid("changes is required.")
	}
	cmd := &fsm.UpdatePermissions{Stamp: in.Stamp, SecurableType: typ, Path: path}
	for _, ch := range in.Body.Changes {
		if ch.Principal == nil || *ch.Principal == "" {
			return nil, httpapi.Invalid("Every change needs a principal.")
		}
		cmd.Changes = append(cmd.Changes, fsm.PermissionChange{Principal: *ch.Principal,
			Add: privileges(ch.Add), Remove: privileges(ch.Remove)})
	}
	return cmd, nil
}

// privileges spells privileges as the state keeps them: upper case, words
// apart ("use_catalog" is "USE CATALOG").
func privileges(in []string) []string {
	out := make([]string, 0, len(in))
	for _, p := range in {
		out = append(out, strings.ToUpper(strings.Join(strings.FieldsFunc(p, func(r rune) bool { return r == '_' || r == ' ' }), " ")))
	}
	return out
}

func permissionsAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, toPermissions(res.Grants.Assignments))
}
