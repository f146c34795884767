package lance_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/fakecluster"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// recordingVendor vends static keys and remembers the operation of the
// last credential it vended.
type recordingVendor struct {
	storage.StaticCredentials
	mu   sync.Mutex
	last string
}

func (v *recordingVendor) Vend(ctx context.Context, loc, op string) (storage.Credential, error) {
	v.mu.Lock()
	v.last = op
	v.mu.Unlock()
	return v.StaticCredentials.Vend(ctx, loc, op)
}

func (v *recordingVendor) lastOp() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	op := v.last
	v.last = ""
	return op
}

// vendingLake serves the Lance API with authentication and vended
// credentials on the fake data path, and without authentication on a
// second server over the same state.
type vendingLake struct {
	t            *testing.T
	node         *fakecluster.Node
	url, open    string
	vendor       *recordingVendor
	admin, alice string
}

func startVendingLake(t *testing.T) *vendingLake {
	l := &vendingLake{t: t, node: fakecluster.New("node1", "file://"+t.TempDir()+"/wh"), admin: "lance-vending-admin-token-0123456789",
		vendor: &recordingVendor{StaticCredentials: storage.StaticCredentials{S3AccessKeyID: "AKIA1", S3SecretAccessKey: "s3-secret",
			S3SessionToken: "s3-session", GCSOAuthToken: "gcs-token", TTL: time.Hour}}}
	a, err := auth.New(auth.Config{Mode: auth.ModeToken, AdminToken: l.admin})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, cfg := range []httpapi.Config{{Logger: log, Auth: a}, {Logger: log}} {
		core := httpapi.New(l.node, cfg)
		lance.Register(core, lance.Config{Credentials: l.vendor})
		srv := httptest.NewServer(core.Handler())
		t.Cleanup(srv.Close)
		if cfg.Auth != nil {
			l.url = srv.URL
		} else {
			l.open = srv.URL
		}
	}
	boot := auth.BootstrapAdmin(l.admin)
	boot.Stamp = fsm.Stamp{Time: time.Now().UnixMilli()}
	l.propose(boot)
	l.alice = l.user("alice")
	return l
}

func (l *vendingLake) propose(cmd fsm.Command) {
	l.t.Helper()
	res, _, err := l.node.Propose(context.Background(), cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		l.t.Fatalf("propose %T: %v", cmd, err)
	}
}

func (l *vendingLake) user(name string) string {
	text, tok := auth.NewToken(name, 0, time.Now())
	l.propose(&fsm.CreatePrincipal{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()},
		Principal: fsm.Principal{Name: name, Type: fsm.PrincipalUser}, Token: &tok})
	return text
}

func (l *vendingLake) grant(typ string, path []string, principal string, privs ...string) {
	l.propose(&fsm.UpdatePermissions{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()}, SecurableType: typ, Path: path,
		Changes: []fsm.PermissionChange{{Principal: principal, Add: privs}}})
}

// post sends a Lance request to base as token's principal.
func (l *vendingLake) post(base, token, path string, body any) testcluster.Response {
	l.t.Helper()
	var headers []string
	if token != "" {
		headers = []string{"Authorization", "Bearer " + token}
	}
	r := testcluster.Do(l.t, "POST", base+lance.Prefix+path+"?delimiter=%24", body, headers...)
	if r.Status != 200 {
		l.t.Fatalf("%s: %d %s", path, r.Status, r.Raw)
	}
	return r
}

// options checks an answer's storage_options: want, and an expiry in
// the vendor's TTL, or none when want is nil; and the operation vended.
func (l *vendingLake) options(r testcluster.Response, want map[string]string, op string) {
	l.t.Helper()
	got, _ := r.Body["storage_options"].(map[string]any)
	if want == nil {
		if _, ok := r.Body["storage_options"]; ok {
			l.t.Fatalf("storage_options where none is due: %s", r.Raw)
		}
		return
	}
	exp, err := strconv.ParseInt(got["expires_at_millis"].(string), 10, 64)
	if err != nil || time.Until(time.UnixMilli(exp)) <= 50*time.Minute || time.Until(time.UnixMilli(exp)) > time.Hour {
		l.t.Fatalf("expires_at_millis: %s", r.Raw)
	}
	delete(got, "expires_at_millis")
	if len(got) != len(want) {
		l.t.Fatalf("storage_options %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			l.t.Fatalf("storage_options %v, want %v", got, want)
		}
	}
	if got := l.vendor.lastOp(); got != op {
		l.t.Fatalf("vended %q, want %q", got, op)
	}
}

// Describe and declare answers carry the vended credential of the
// table's location as Lance storage options: READ_WRITE for a caller
// that may change the table, READ for one that may only read it;
// nothing for a location with no keys to vend, or when the client asks
// for none.
func TestLanceVendsStorageOptions(t *testing.T) {
	l := startVendingLake(t)
	s3 := map[string]string{"aws_access_key_id": "AKIA1", "aws_secret_access_key": "s3-secret", "aws_session_token": "s3-session"}
	tables := map[string]string{"s3t": "s3://lake/wh/s3t.lance", "gst": "gs://lake/wh/gst.lance", "local": "file://" + t.TempDir() + "/local.lance"}
	for name, loc := range tables {
		l.post(l.url, l.admin, "/v1/table/"+esc("unity", "default", name)+"/declare", map[string]any{"location": loc})
	}
	l.vendor.lastOp()
	describe := func(token, name string, body any) testcluster.Response {
		return l.post(l.url, token, "/v1/table/"+esc("unity", "default", name)+"/describe", body)
	}

	l.options(describe(l.admin, "s3t", nil), s3, "READ_WRITE")
	l.options(describe(l.admin, "gst", nil), map[string]string{"google_storage_token": "gcs-token"}, "READ_WRITE")
	l.options(describe(l.admin, "local", nil), nil, "")
	l.options(describe(l.admin, "s3t", map[string]any{"vend_credentials": false}), nil, "")
	l.options(describe(l.admin, "s3t", map[string]any{"vend_credentials": true}), s3, "READ_WRITE")

	l.grant(fsm.SecurableCatalog, []string{"unity"}, "alice", fsm.PrivUseCatalog)
	l.grant(fsm.SecurableSchema, []string{"unity", "default"}, "alice", fsm.PrivUseSchema, fsm.PrivCreateTable)
	l.grant(fsm.SecurableTable, []string{"unity", "default", "s3t"}, "alice", fsm.PrivSelect)
	l.options(describe(l.alice, "s3t", nil), s3, "READ")
	l.grant(fsm.SecurableTable, []string{"unity", "default", "s3t"}, "alice", fsm.PrivModify)
	l.options(describe(l.alice, "s3t", nil), s3, "READ_WRITE")

	// The declarer owns the table: it gets what writes it.
	l.options(l.post(l.url, l.alice, "/v1/table/"+esc("unity", "default", "hers")+"/declare",
		map[string]any{"location": "s3://lake/wh/hers.lance"}), s3, "READ_WRITE")
	l.options(l.post(l.url, l.alice, "/v1/table/"+esc("unity", "default", "quiet")+"/declare",
		map[string]any{"location": "s3://lake/wh/quiet.lance", "vend_credentials": false}), nil, "")
	l.options(l.post(l.url, l.alice, "/v1/table/"+esc("unity", "default", "hers")+"/describe", nil), s3, "READ_WRITE")

	// Without authentication, everyone may change every table.
	l.options(l.post(l.open, "", "/v1/table/"+esc("unity", "default", "gst")+"/describe", nil),
		map[string]string{"google_storage_token": "gcs-token"}, "READ_WRITE")
}
