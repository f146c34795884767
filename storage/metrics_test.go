package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/storage"
)

func TestInstrumentedTimesEveryOperation(t *testing.T) {
	reg := prometheus.NewRegistry()
	blobs := storage.NewBlobs(storage.BlobOptions{})
	defer blobs.Close()
	st := storage.Instrumented(blobs, reg)
	ctx := context.Background()
	loc := "file://" + t.TempDir() + "/a/b.json"
	if err := st.Write(ctx, loc, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, loc, []byte("{}")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second write: %v", err)
	}
	if _, err := st.Read(ctx, loc); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, loc+".missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("stat of a missing object: %v", err)
	}
	for _, c := range []struct {
		op, result string
		want       int
	}{{"write", "ok", 1}, {"write", "exists", 1}, {"read", "ok", 1}, {"stat", "not_found", 1}, {"delete", "ok", 0}} {
		if got := samples(t, reg, c.op, c.result); got != c.want {
			t.Errorf("%s/%s: %d samples, want %d", c.op, c.result, got, c.want)
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
