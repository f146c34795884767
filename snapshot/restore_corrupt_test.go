package snapshot

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"
)

// mutate changes a few bytes of b: overwrites, deletions, insertions and
// duplicated runs, then maybe a truncation.
func mutate(r *rand.Rand, b []byte) []byte {
	in := bytes.Clone(b)
	for range 1 + r.IntN(4) {
		p := r.IntN(len(in))
		switch r.IntN(4) {
		case 0:
			in[p] = byte(r.IntN(256))
		case 1:
			in = append(in[:p:p], in[p+1:]...)
		case 2:
			in = append(in[:p:p], append([]byte{byte(r.IntN(256))}, in[p:]...)...)
		default:
			q := p + r.IntN(len(in)-p)
			in = append(in[:q:q], append(bytes.Clone(in[p:q]), in[q:]...)...)
		}
	}
	if r.IntN(3) == 0 {
		in = in[:r.IntN(len(in))]
	}
	return in
}

// A backup damaged in any small way never restores: the checksums catch
// every change, and restoring the damage fails with an error, never a
// panic. The seed is the backup the release at 2fa8555 wrote.
func TestDamagedBackupsNeverRestore(t *testing.T) {
	old, err := os.ReadFile("../fsm/testdata/upgrade/backup-2fa8555.snap")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2026, 12))
	for i := range 5000 {
		in := mutate(r, old)
		if _, _, err := ReadState(bytes.NewReader(in)); err == nil && !bytes.Equal(in, old) {
			t.Fatalf("damage %d restored without an error", i)
		}
	}
}
