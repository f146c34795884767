package sharing

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/ucrest"
)

// The provider's side: shares, what they hold and who may read them,
// managed through UC REST in Unity Catalog's shapes. Every route goes to
// the leader.

const (
	sharesPrefix     = ucPrefix + "/shares"
	recipientsPrefix = ucPrefix + "/recipients"
	keyPrefix        = ucPrefix + "/delta-sharing"
)

// mountManagement registers the provider's routes. Nothing in our
// privilege model grants creating a share or a recipient, so only the
// admin does; whoever owns one then manages it, and adding a table to a
// share also takes SELECT on the table, so a share never hands out more
// than its owner may read. The activation link is the recipient's
// one-time secret and needs no credential.
func (s *Server) mountManagement() {
	mount := func(prefix string) *httpapi.Routes {
		return s.core.Mount(httpapi.Group{Name: "sharing", Prefix: prefix, Errors: ucrest.Errors(), ToLeader: true, Relay: true})
	}
	sh := mount(sharesPrefix)
	sh.POST("", httpapi.AdminOnly(), httpapi.Write(s.core, buildCreateShare, nil, shareAnswer(false)))
	sh.GET("", httpapi.AnyCaller(), s.listManagedShares)
	sh.GET("/:name", httpapi.Needs(shareOwner), s.getManagedShare)
	sh.PATCH("/:name", httpapi.Needs(shareUpdateNeeds), httpapi.Write(s.core, s.buildUpdateShare, nil, shareAnswer(true)))
	sh.DELETE("/:name", httpapi.Needs(shareOwner), httpapi.Write(s.core, buildDeleteShare, nil, emptyAnswer))
	sh.GET("/:name/permissions", httpapi.Needs(shareOwner), s.getPermissions)
	sh.PATCH("/:name/permissions", httpapi.Needs(shareOwner), httpapi.Write(s.core, buildUpdatePermissions, nil, permissionsAnswer))
	s.mountRecipients(mount(recipientsPrefix))
	act := mount(ActivationPath)
	act.GET("/:code", httpapi.Public(), httpapi.Write(s.core, s.buildActivate, nil, s.profileAnswer))
	key := mount(keyPrefix)
	key.POST("/url-signing-key/rotate", httpapi.AdminOnly(), httpapi.Write(s.core, buildRotateKey, nil, keyAnswer))
}

// shareOwner is the need of owning the share the route names.
func shareOwner(c echo.Context) ([]access.Need, error) {
	return []access.Need{access.ShareOwner(c.Param("name"))}, nil
}

// shareUpdateNeeds is what an update of a share needs: owning it, and
// SELECT on every table it adds. A name that is not catalog.schema.table
// needs nothing more: the update refuses it.
func shareUpdateNeeds(c echo.Context) ([]access.Need, error) {
	var body updateShareBody
	if err := httpapi.PeekBody(c, &body); err != nil {
		return nil, err
	}
	needs := []access.Need{access.ShareOwner(c.Param("name"))}
	for _, u := range body.Updates {
		if !strings.EqualFold(u.Action, "ADD") || u.DataObject == nil {
			continue
		}
		if path := strings.Split(u.DataObject.Name, "."); len(path) == 3 {
			needs = append(needs, access.OnTable(fsm.PrivSelect, path...))
		}
	}
	return needs, nil
}

// ownedPage is one page of a listing that shows the caller only what
// keep accepts: it reads on past what it leaves out, so that a page is
// short only when the listing is over, and the page token (the last name
// shown) resumes where it stopped.
func ownedPage[T any](after string, limit int, list func(after string, limit int) []T, name func(T) string, keep func(T) bool) []T {
	var out []T
	for len(out) < limit {
		items := list(after, limit)
		for _, it := range items {
			if keep(it) && len(out) < limit {
				out = append(out, it)
			}
		}
		if len(items) < limit {
			break
		}
		after = name(items[len(items)-1])
	}
	return out
}

func emptyAnswer(c echo.Context, _ fsm.Result) error { return c.JSON(http.StatusOK, map[string]any{}) }

type dataObject struct {
	Name                     string  `json:"name"`
	DataObjectType           string  `json:"data_object_type,omitempty"`
	SharedAs                 string  `json:"shared_as,omitempty"`
	HistoryDataSharingStatus string  `json:"history_data_sharing_status,omitempty"`
	StartVersion             *int64  `json:"start_version,omitempty"`
	Comment                  *string `json:"comment,omitempty"`
	AddedAt                  int64   `json:"added_at,omitempty"`
	AddedBy                  string  `json:"added_by,omitempty"`
	Status                   string  `json:"status,omitempty"`
}

type shareInfo struct {
	Name      string       `json:"name"`
	Comment   *string      `json:"comment,omitempty"`
	Owner     string       `json:"owner,omitempty"`
	CreatedAt int64        `json:"created_at"`
	CreatedBy string       `json:"created_by,omitempty"`
	UpdatedAt int64        `json:"updated_at"`
	UpdatedBy string       `json:"updated_by,omitempty"`
	ID        string       `json:"id"`
	Objects   []dataObject `json:"objects,omitempty"`
}

func toShareInfo(sh *fsm.Share, objects bool) shareInfo {
	out := shareInfo{Name: sh.Name, Comment: sh.Comment, Owner: sh.Owner, CreatedAt: sh.CreatedAt, CreatedBy: sh.CreatedBy,
		UpdatedAt: sh.UpdatedAt, UpdatedBy: sh.UpdatedBy, ID: sh.ID}
	if objects {
		out.Objects = []dataObject{}
		for _, o := range sh.Objects {
			out.Objects = append(out.Objects, dataObject{Name: o.Name, DataObjectType: o.DataObjectType, SharedAs: o.SharedAs,
				HistoryDataSharingStatus: o.HistoryDataSharingStatus, StartVersion: ptr(o.StartVersion), Comment: o.Comment,
				AddedAt: o.AddedAt, AddedBy: o.AddedBy, Status: "ACTIVE"})
		}
	}
	return out
}

func shareAnswer(objects bool) httpapi.Render {
	return func(c echo.Context, res fsm.Result) error {
		return c.JSON(http.StatusOK, toShareInfo(res.Share, objects))
	}
}

type createShareBody struct {
	Name    *string `json:"name"`
	Comment *string `json:"comment"`
}

func buildCreateShare(in *httpapi.In[createShareBody]) (*fsm.CreateShare, error) {
	name, err := httpapi.RequiredName(in.Body.Name, "name")
	if err != nil {
		return nil, err
	}
	return &fsm.CreateShare{Stamp: in.Stamp, ID: uuid.NewString(), Name: name, Comment: in.Body.Comment}, nil
}

type updateShareBody struct {
	Comment *string `json:"comment"`
	Updates []struct {
		Action     string      `json:"action"`
		DataObject *dataObject `json:"data_object"`
	} `json:"updates"`
}

func buildUpdateShare(in *httpapi.In[updateShareBody]) (*fsm.UpdateShare, error) {
	cmd := &fsm.UpdateShare{Stamp: in.Stamp, Name: in.Param("name"), Comment: in.Body.Comment}
	for i, u := range in.Body.Updates {
		action := strings.ToUpper(u.Action)
		if action != "ADD" && action != "REMOVE" && action != "UPDATE" {
			return nil, httpapi.Invalid("updates[%d].action must be ADD, REMOVE or UPDATE, got %q", i, u.Action)
		}
		if u.DataObject == nil || u.DataObject.Name == "" && u.DataObject.SharedAs == "" {
			return nil, httpapi.Invalid("updates[%d].data_object needs a name", i)
		}
		cmd.Updates = append(cmd.Updates, fsm.ShareUpdate{Action: action, Object: sharedObject(u.DataObject)})
	}
	return cmd, nil
}

// buildUpdateShare is buildUpdateShare checked against storage: a table
// is added to a share only once its Delta log can be read (see
// checkReadable).
func (s *Server) buildUpdateShare(in *httpapi.In[updateShareBody]) (*fsm.UpdateShare, error) {
	cmd, err := buildUpdateShare(in)
	if err != nil {
		return nil, err
	}
	return cmd, s.checkReadable(in.Request().Context(), cmd)
}

func sharedObject(d *dataObject) fsm.SharedObject {
	o := fsm.SharedObject{Name: d.Name, DataObjectType: strings.ToUpper(d.DataObjectType), SharedAs: d.SharedAs,
		HistoryDataSharingStatus: strings.ToUpper(d.HistoryDataSharingStatus), Comment: d.Comment}
	if d.StartVersion != nil {
		o.StartVersion = *d.StartVersion
	}
	return o
}

func buildDeleteShare(in *httpapi.In[httpapi.NoBody]) (*fsm.DeleteShare, error) {
	return &fsm.DeleteShare{Stamp: in.Stamp, Name: in.Param("name")}, nil
}

func (s *Server) listManagedShares(c echo.Context) error {
	after, limit, err := ucrest.Page(c, 1000)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	name := func(sh *fsm.Share) string { return strings.ToLower(sh.Name) }
	all := s.core.IsAdmin(c, st)
	items := ownedPage(after, limit, st.Shares, name, func(sh *fsm.Share) bool {
		return all || s.core.Allowed(c, st, access.ShareOwner(sh.Name))
	})
	return c.JSON(http.StatusOK, ucrest.Listing("shares", items, limit, name, func(sh *fsm.Share) shareInfo { return toShareInfo(sh, false) }))
}

func (s *Server) getManagedShare(c echo.Context) error {
	objects, err := httpapi.BoolParam(c, "include_shared_data", true)
	if err != nil {
		return err
	}
	sh, err := s.managedShare(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toShareInfo(sh, objects))
}

func (s *Server) managedShare(c echo.Context) (*fsm.Share, error) {
	st, err := s.core.State(c)
	if err != nil {
		return nil, err
	}
	sh, ok := st.Share(c.Param("name"))
	if !ok {
		return nil, fsm.Errf(fsm.CodeShareNotFound, "Share not found: %s", httpapi.Clip(c.Param("name")))
	}
	return sh, nil
}

type privilegeAssignment struct {
	Principal  string   `json:"principal"`
	Privileges []string `json:"privileges"`
}

func permissionsOf(sh *fsm.Share) map[string][]privilegeAssignment {
	out := []privilegeAssignment{}
	for _, g := range sh.Grants {
		out = append(out, privilegeAssignment{Principal: g, Privileges: []string{"SELECT"}})
	}
	return map[string][]privilegeAssignment{"privilege_assignments": out}
}

func (s *Server) getPermissions(c echo.Context) error {
	sh, err := s.managedShare(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, permissionsOf(sh))
}

func permissionsAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, permissionsOf(res.Share))
}

type permissionsBody struct {
	Changes []struct {
		Principal string   `json:"principal"`
		Add       []string `json:"add"`
		Remove    []string `json:"remove"`
	} `json:"changes"`
}

func buildUpdatePermissions(in *httpapi.In[permissionsBody]) (*fsm.UpdateSharePermissions, error) {
	cmd := &fsm.UpdateSharePermissions{Stamp: in.Stamp, Share: in.Param("name")}
	for i, ch := range in.Body.Changes {
		if ch.Principal == "" {
			return nil, httpapi.Invalid("changes[%d].principal is required", i)
		}
		cmd.Changes = append(cmd.Changes, fsm.PermissionChange{Principal: ch.Principal, Add: ch.Add, Remove: ch.Remove})
	}
	return cmd, nil
}

// rotateKeyBody is the rotation's body: none, or an empty object.
type rotateKeyBody struct{}

func buildRotateKey(in *httpapi.In[rotateKeyBody]) (*fsm.SetURLSigningKey, error) {
	cmd := newKeyCommand(false)
	cmd.Stamp = in.Stamp
	return cmd, nil
}

func keyAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, map[string]any{"key_index": res.SigningKey.Index, "created_at": res.SigningKey.CreatedAt})
}
