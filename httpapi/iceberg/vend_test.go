package iceberg_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/fakecluster"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// memoryS3 keeps s3:// objects in memory, shared by every node, and
// leaves every other location to the node's own store.
type memoryS3 struct {
	iceberg.ObjectStore
	files *sync.Map
}

func (m memoryS3) Read(ctx context.Context, loc string) ([]byte, error) {
	if !strings.HasPrefix(loc, "s3://") {
		return m.ObjectStore.Read(ctx, loc)
	}
	if b, ok := m.files.Load(loc); ok {
		return b.([]byte), nil
	}
	return nil, storage.ErrNotFound
}

func (m memoryS3) Write(ctx context.Context, loc string, data []byte) error {
	if !strings.HasPrefix(loc, "s3://") {
		return m.ObjectStore.Write(ctx, loc, data)
	}
	if _, taken := m.files.LoadOrStore(loc, data); taken {
		return storage.ErrExists
	}
	return nil
}

const delegation = "X-Iceberg-Access-Delegation"

var s3Keys = storage.StaticCredentials{S3AccessKeyID: "AKIDEXAMPLE", S3SecretAccessKey: "secret", S3SessionToken: "session"}

// expectVended checks that an answer carries the S3 keys for prefix, in
// storage-credentials and, in a table's answer, merged into config.
func expectVended(t *testing.T, r testcluster.Response, prefix string) {
	t.Helper()
	creds, _ := r.Body["storage-credentials"].([]any)
	if len(creds) != 1 {
		t.Fatalf("storage-credentials of %s", r.Raw)
	}
	cred := creds[0].(map[string]any)
	if cred["prefix"] != prefix {
		t.Fatalf("credential for %s in %s", prefix, r.Raw)
	}
	cfg := cred["config"].(map[string]any)
	if _, isTable := r.Body["metadata"]; isTable {
		cfg, _ = r.Body["config"].(map[string]any)
	}
	want := map[string]string{"s3.access-key-id": "AKIDEXAMPLE", "s3.secret-access-key": "secret", "s3.session-token": "session"}
	for k, v := range want {
		if cred["config"].(map[string]any)[k] != v || cfg[k] != v {
			t.Fatalf("%s is not vended in %s", k, r.Raw)
		}
	}
}

func expectNotVended(t *testing.T, r testcluster.Response) {
	t.Helper()
	cfg, _ := r.Body["config"].(map[string]any)
	if _, has := r.Body["storage-credentials"]; has || len(cfg) != 0 {
		t.Fatalf("credentials vended unasked: %s", r.Raw)
	}
}

// With X-Iceberg-Access-Delegation: vended-credentials, creates, loads and
// commits of a table on S3 carry its credentials; without it, or with
// remote-signing alone, they carry none.
func TestVendedCredentials(t *testing.T) {
	files := &sync.Map{}
	nodes := testcluster.Start(t, 3, testcluster.Options{Credentials: s3Keys,
		IcebergObjects: func(s storage.ObjectStore) iceberg.ObjectStore { return memoryS3{ObjectStore: s, files: files} }})
	testcluster.Leader(t, nodes)
	ok(t, http.StatusOK, http.MethodPost, base(nodes[0])+"/namespaces", `{"namespace":["db"]}`)
	loc := "s3://bucket/tables/t1"
	body := strings.Replace(createBody("t1"), `"name":"t1",`, `"name":"t1","location":"`+loc+`",`, 1)
	expectVended(t, ok(t, http.StatusOK, http.MethodPost, base(nodes[1])+"/namespaces/db/tables", body, delegation, "vended-credentials"), loc)

	u := base(nodes[2]) + "/namespaces/db/tables/t1"
	expectVended(t, ok(t, http.StatusOK, http.MethodGet, u, nil, delegation, "vended-credentials"), loc)
	expectVended(t, ok(t, http.StatusOK, http.MethodGet, u, nil, delegation, "remote-signing, Vended-Credentials"), loc)
	expectNotVended(t, ok(t, http.StatusOK, http.MethodGet, u, nil))
	expectNotVended(t, ok(t, http.StatusOK, http.MethodGet, u, nil, delegation, "remote-signing"))

	commit := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`
	expectVended(t, ok(t, http.StatusOK, http.MethodPost, u, commit, delegation, "vended-credentials"), loc)
	expectVended(t, ok(t, http.StatusOK, http.MethodPost, u, commit, delegation, "vended-credentials"), loc) // a no-op commit
	if r := ok(t, http.StatusOK, http.MethodPost, u, `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"c"}}]}`); r.Body["config"] != nil {
		t.Fatalf("a commit answered config unasked: %s", r.Raw)
	}
	expectVended(t, ok(t, http.StatusOK, http.MethodGet, u+"/credentials", nil), loc)

	staged := strings.Replace(createBody("t2"), `"name":"t2",`, `"name":"t2","location":"s3://bucket/tables/t2",`, 1)
	staged = strings.Replace(staged, `"stage-create":false`, `"stage-create":true`, 1)
	expectVended(t, ok(t, http.StatusOK, http.MethodPost, base(nodes[0])+"/namespaces/db/tables", staged, delegation, "vended-credentials"), "s3://bucket/tables/t2")
}

// recordingVendor vends one key and records the operations asked for.
type recordingVendor struct {
	mu  sync.Mutex
	ops []string
}

func (v *recordingVendor) Vend(_ context.Context, loc, op string) (storage.Credential, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ops = append(v.ops, op)
	return storage.Credential{Prefix: loc, Operation: op, Config: map[string]string{"s3.access-key-id": op}}, nil
}

func (v *recordingVendor) last() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.ops) == 0 {
		return ""
	}
	return v.ops[len(v.ops)-1]
}

// fastAuthAPI serves the Iceberg catalog with authentication on a node
// without raft, with the vendor given; it returns the node and the URL
// of warehouse unity.
func fastAuthAPI(t *testing.T, v iceberg.CredentialVendor) (*fakecluster.Node, string) {
	t.Helper()
	node := fakecluster.New("node1", "file://"+t.TempDir()+"/warehouse")
	a, err := auth.New(auth.Config{Mode: auth.ModeToken, AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	core := httpapi.New(node, httpapi.Config{Auth: a})
	iceberg.Register(core, iceberg.Config{Objects: storage.NewBlobs(storage.BlobOptions{}), Credentials: v})
	srv := httptest.NewUnstartedServer(core.Handler())
	srv.Listener = core.Listener(srv.Listener)
	srv.Start()
	t.Cleanup(srv.Close)
	node.SetHTTPAddr(strings.TrimPrefix(srv.URL, "http://"))
	fakePropose(t, node, auth.BootstrapAdmin(adminToken))
	return node, srv.URL + iceberg.Prefix + "/v1/unity"
}

func fakePropose(t *testing.T, node *fakecluster.Node, cmd fsm.Command) {
	t.Helper()
	res, _, err := node.Propose(context.Background(), cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("propose %T: %v", cmd, err)
	}
}

// Vended credentials are READ for a caller with SELECT and READ_WRITE
// for one with MODIFY, on loads, on the credentials route and on commits.
func TestVendedOperationFollowsPrivileges(t *testing.T) {
	v := &recordingVendor{}
	node, u := fastAuthAPI(t, v)
	admin := bearer(adminToken)
	ok(t, http.StatusOK, http.MethodPost, u+"/namespaces", `{"namespace":["db"]}`, admin...)
	ok(t, http.StatusOK, http.MethodPost, u+"/namespaces/db/tables", createBody("t"), admin...)
	text, tok := auth.NewToken("bob", 0, time.Now())
	fakePropose(t, node, &fsm.CreatePrincipal{Principal: fsm.Principal{Name: "bob", Type: fsm.PrincipalUser}, Token: &tok})
	grantBob := func(typ string, path []string, privs ...string) {
		fakePropose(t, node, &fsm.UpdatePermissions{SecurableType: typ, Path: path,
			Changes: []fsm.PermissionChange{{Principal: "bob", Add: privs}}})
	}
	grantBob(fsm.SecurableCatalog, []string{"unity"}, fsm.PrivUseCatalog)
	grantBob(fsm.SecurableSchema, []string{"unity", "db"}, fsm.PrivUseSchema)
	grantBob(fsm.SecurableTable, []string{"unity", "db", "t"}, fsm.PrivSelect)

	bob := append(bearer(text), delegation, "vended-credentials")
	load := func(want string) {
		t.Helper()
		r := ok(t, http.StatusOK, http.MethodGet, u+"/namespaces/db/tables/t", nil, bob...)
		if v.last() != want || r.Body["config"].(map[string]any)["s3.access-key-id"] != want {
			t.Fatalf("load vended %s, want %s: %s", v.last(), want, r.Raw)
		}
		ok(t, http.StatusOK, http.MethodGet, u+"/namespaces/db/tables/t/credentials", nil, bob...)
		if v.last() != want {
			t.Fatalf("the credentials route vended %s, want %s", v.last(), want)
		}
	}
	load("READ")
	expectDenied(t, testcluster.Do(t, http.MethodPost, u+"/namespaces/db/tables/t", `{"requirements":[],"updates":[]}`, bob...))
	grantBob(fsm.SecurableTable, []string{"unity", "db", "t"}, fsm.PrivModify)
	load("READ_WRITE")
	ok(t, http.StatusOK, http.MethodPost, u+"/namespaces/db/tables/t", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, bob...)
	if v.last() != "READ_WRITE" {
		t.Fatalf("a commit vended %s", v.last())
	}
	ok(t, http.StatusOK, http.MethodGet, u+"/namespaces/db/tables/t", nil, append(admin, delegation, "vended-credentials")...)
	if v.last() != "READ_WRITE" {
		t.Fatalf("the admin's load vended %s", v.last())
	}
}
