package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func parse(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var cfg Config
	cfg.bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := applyEnv(fs); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func TestDefaultsStartASingleNode(t *testing.T) {
	cfg, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:8080" || cfg.RaftAddr != "127.0.0.1:8300" || cfg.GossipAddr != "127.0.0.1:8301" || cfg.BootstrapExpect != 1 {
		t.Fatalf("defaults: %+v", cfg)
	}
	if !strings.HasPrefix(cfg.StorageRoot, "file:///") || !strings.HasSuffix(cfg.StorageRoot, "/raftcat-data/warehouse") {
		t.Fatalf("storage root %q, want file://<abs data dir>/warehouse", cfg.StorageRoot)
	}
	if cfg.HTTPAdvertise != cfg.HTTPAddr {
		t.Fatalf("http advertise %q, want the bind address", cfg.HTTPAdvertise)
	}
}

func TestEnvironmentSetsFlagsButFlagsWin(t *testing.T) {
	cfg, err := parse(t, []string{"--http-addr", "127.0.0.1:9999"}, map[string]string{
		"RAFTCAT_NODE_ID": "n7", "RAFTCAT_BOOTSTRAP_EXPECT": "3", "RAFTCAT_HTTP_ADDR": "127.0.0.1:1111",
		"RAFTCAT_JOIN": "a:1, b:2", "RAFTCAT_STORAGE_ROOT": "/srv/wh/",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeID != "n7" || cfg.BootstrapExpect != 3 || cfg.HTTPAddr != "127.0.0.1:9999" {
		t.Fatalf("env/flags: %+v", cfg)
	}
	if got := cfg.joinAddrs(); len(got) != 2 || got[0] != "a:1" || got[1] != "b:2" {
		t.Fatalf("join = %q", got)
	}
	if cfg.StorageRoot != "file:///srv/wh" {
		t.Fatalf("storage root %q not normalised", cfg.StorageRoot)
	}
}

func TestInvalidConfigurationIsExplained(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--bootstrap-expect", "0"}, want: "--bootstrap-expect must be at least 1"},
		{args: []string{"--http-addr", "nonsense"}, want: "--http-addr"},
		{args: []string{"--http-addr", "0.0.0.0:8080"}, want: "--http-advertise"},
		{args: []string{"--storage-root", "ftp://x/y"}, want: "--storage-root"},
		{args: []string{"--log-level", "loud"}, want: "--log-level"},
		{env: map[string]string{"RAFTCAT_BOOTSTRAP_EXPECT": "three"}, want: "RAFTCAT_BOOTSTRAP_EXPECT"},
	}
	for _, c := range cases {
		_, err := parse(t, c.args, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: err = %v, want it to mention %q", c.args, c.env, err, c.want)
		}
	}
}

func TestHelpListsEveryFlagWithItsEnvironmentVariable(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--node-id [RAFTCAT_NODE_ID]", "--bootstrap-expect [RAFTCAT_BOOTSTRAP_EXPECT]", "--storage-root", "--join"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	if code := run([]string{"bogus"}, &out, &errOut); code != 2 {
		t.Fatalf("unknown command exit %d, want 2", code)
	}
}

func TestObjectStoreSettingsFromFlagsAndEnvironment(t *testing.T) {
	cfg, err := parse(t, []string{"--s3-region", "eu-west-3"}, map[string]string{
		"RAFTCAT_S3_ENDPOINT": "http://127.0.0.1:7070", "RAFTCAT_S3_PATH_STYLE": "true", "RAFTCAT_S3_REGION": "us-west-2",
	})
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Objects; o.S3Endpoint != "http://127.0.0.1:7070" || !o.S3PathStyle || o.S3Region != "eu-west-3" {
		t.Fatalf("object store options: %+v", o)
	}
	for _, bad := range []string{"127.0.0.1:7070", "ftp://host", "http://"} {
		if _, err := parse(t, []string{"--s3-endpoint", bad}, nil); err == nil || !strings.Contains(err.Error(), "--s3-endpoint") {
			t.Errorf("--s3-endpoint %q: err = %v", bad, err)
		}
	}
	var out, errOut bytes.Buffer
	run([]string{"serve", "--help"}, &out, &errOut)
	for _, want := range []string{"--s3-endpoint [RAFTCAT_S3_ENDPOINT]", "--s3-path-style [RAFTCAT_S3_PATH_STYLE]", "--s3-region [RAFTCAT_S3_REGION]", "standard chain"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
