package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/storage"
)

// A write that wrote metadata files and then failed deletes them, unless
// its outcome is unknown: then the files stay (the entry may yet apply)
// and the answer is CommitStateUnknown.
func TestSettleFailedWrites(t *testing.T) {
	objs := storage.NewBlobs(storage.BlobOptions{})
	defer objs.Close()
	s := &Server{cfg: Config{Objects: objs}, cache: newMetadataCache(1 << 20), log: slog.New(slog.DiscardHandler)}
	root := "file://" + t.TempDir()
	cases := []struct {
		err      error
		code     fsm.Code
		keepFile bool
		applied  bool
	}{
		{fsm.Errf(fsm.CodeRequirementConflict, "lost"), fsm.CodeRequirementConflict, false, false},
		{fmt.Errorf("propose: %w", clusterapi.ErrUnknownOutcome), fsm.CodeCommitStateUnknown, true, false},
		{context.DeadlineExceeded, fsm.CodeCommitStateUnknown, true, false},
		// The entry applied; reading the answer's metadata then failed.
		{fsm.Errf(fsm.CodeInvalid, "answer failed"), fsm.CodeInvalid, true, true},
	}
	for i, tc := range cases {
		loc := fmt.Sprintf("%s/metadata/%05d-x.metadata.json", root, i)
		if err := objs.Write(context.Background(), loc, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		c := echo.New().NewContext(httptest.NewRequest("POST", "/", nil), httptest.NewRecorder())
		c.Set(writtenKey, []string{loc})
		if tc.applied {
			c.Set(appliedKey, true)
		}
		var de *fsm.Error
		if err := s.settle(c, tc.err); !errors.As(err, &de) || de.Code != tc.code {
			t.Errorf("%v settled as %v, want code %v", tc.err, err, tc.code)
		}
		if _, err := objs.Stat(context.Background(), loc); (err == nil) != tc.keepFile {
			t.Errorf("%v: file kept %v, want %v", tc.err, err == nil, tc.keepFile)
		}
	}
}
