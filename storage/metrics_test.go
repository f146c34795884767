package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/storage"
)

func TestInstrumentedTimesEveryOperation(t *testing.T) {
	reg := prometheus.NewRegistry()
	blobs := storage.NewBlobs(storage.BlobOptions{})
	defer blobs.Close()
	st := storage.Instrumented(blobs, reg)
	ctx := context.Background()
	dir := "file://" + t.TempDir()
	loc := dir + "/a/b.json"
	calls := []struct {
		op, result string
		call       func() error
	}{
		{"write", "ok", func() error { return st.Write(ctx, loc, []byte("{}")) }},
		{"write", "exists", func() error { return st.Write(ctx, loc, []byte("{}")) }},
		{"read", "ok", func() error { _, err := st.Read(ctx, loc); return err }},
		{"read", "ok", func() error { _, err := st.ReadRange(ctx, loc, 0, 1); return err }},
		{"stat", "not_found", func() error { _, err := st.Stat(ctx, loc+".missing"); return err }},
		{"list", "ok", func() error { _, err := st.List(ctx, dir+"/a/"); return err }},
		{"sign", "error", func() error { _, err := st.SignedURL(ctx, loc, time.Minute); return err }},
		{"delete", "ok", func() error { return st.Delete(ctx, loc) }},
		{"delete", "not_found", func() error { return st.Delete(ctx, loc) }},
	}
	want := map[[2]string]int{}
	for _, c := range calls {
		err := c.call()
		if (err == nil) != (c.result == "ok") || c.result == "exists" && !errors.Is(err, storage.ErrExists) {
			t.Fatalf("%s: err %v, want result %s", c.op, err, c.result)
		}
		want[[2]string{c.op, c.result}]++
	}
	for k, n := range want {
		if got := samples(t, reg, k[0], k[1]); got != n {
			t.Errorf("%s/%s: %d samples, want %d", k[0], k[1], got, n)
		}
	}
}

// samples counts the observations of one op and result on file storage.
func samples(t *testing.T, reg *prometheus.Registry, op, result string) int {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] == op && labels["result"] == result && labels["storage"] == "file" {
				return int(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}
