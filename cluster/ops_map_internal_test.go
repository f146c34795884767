package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// Raft reports two membership refusals as plain text; when a change of
// configuration slips past the checks before them, they still map to the
// sentinels that make them client errors (the texts are raft's own).
func TestMembershipRefusalsRaftReportsAsTextMapToSentinels(t *testing.T) {
	other := errors.New("disk on fire")
	cases := []struct {
		err  error
		want error
	}{
		{fmt.Errorf("need at least one voter in configuration: %v", raft.Configuration{}), ErrLastVoter},
		{fmt.Errorf("cannot find peer"), ErrNoPeer},
		{raft.ErrNotLeader, ErrNotLeader},
		{other, other},
	}
	for _, c := range cases {
		if got := mapMembershipError(c.err); !errors.Is(got, c.want) {
			t.Errorf("mapMembershipError(%q) = %v, want %v", c.err, got, c.want)
		}
	}
}
