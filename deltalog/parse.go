package deltalog

import (
	"bytes"

	"github.com/goccy/go-json"
)

// logLine is one decoded line of a commit or JSON checkpoint. Unknown
// actions (txn, domainMetadata, checkpointMetadata, …) decode to nothing.
type logLine struct {
	Add        *AddFile        `json:"add"`
	Remove     *RemoveFile     `json:"remove"`
	CDC        *CDCFile        `json:"cdc"`
	Metadata   *Metadata       `json:"metaData"`
	Protocol   *Protocol       `json:"protocol"`
	CommitInfo json.RawMessage `json:"commitInfo"`
	Sidecar    *struct {
		Path string `json:"path"`
	} `json:"sidecar"`
}

// commitInfoHead is the part of commitInfo this package interprets.
type commitInfoHead struct {
	InCommitTimestamp *int64 `json:"inCommitTimestamp"`
}

// parseLines decodes NDJSON, one action per non-blank line.
func parseLines(data []byte) ([]logLine, error) {
	out := make([]logLine, 0, bytes.Count(data, []byte{'\n'})+1)
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ll logLine
		if err := json.Unmarshal(line, &ll); err != nil {
			return nil, corruptf("line %d: %v", n, err)
		}
		ll.normalize()
		out = append(out, ll)
	}
	return out, nil
}

func (ll *logLine) normalize() {
	if ll.Add != nil {
		ll.Add.normalize()
	}
	if ll.CDC != nil {
		ll.CDC.normalize()
	}
	if ll.Metadata != nil {
		ll.Metadata.normalize()
	}
	if len(ll.CommitInfo) > 0 && string(ll.CommitInfo) == "null" {
		ll.CommitInfo = nil
	}
}

// action converts a line to the public form; false for lines whose action
// this package does not expose.
func (ll *logLine) action() (Action, bool, error) {
	switch {
	case ll.Add != nil:
		return Action{Add: ll.Add}, true, nil
	case ll.Remove != nil:
		return Action{Remove: ll.Remove}, true, nil
	case ll.CDC != nil:
		return Action{CDC: ll.CDC}, true, nil
	case ll.Metadata != nil:
		return Action{Metadata: ll.Metadata}, true, nil
	case ll.Protocol != nil:
		return Action{Protocol: ll.Protocol}, true, nil
	case ll.CommitInfo != nil:
		var ci map[string]any
		if err := json.Unmarshal(ll.CommitInfo, &ci); err != nil {
			return Action{}, false, corruptf("commitInfo: %v", err)
		}
		return Action{CommitInfo: ci}, true, nil
	}
	return Action{}, false, nil
}

// inCommitTimestamp returns commitInfo.inCommitTimestamp of a line.
func (ll *logLine) inCommitTimestamp() (int64, bool) {
	if ll.CommitInfo == nil {
		return 0, false
	}
	var h commitInfoHead
	if json.Unmarshal(ll.CommitInfo, &h) != nil || h.InCommitTimestamp == nil {
		return 0, false
	}
	return *h.InCommitTimestamp, true
}

// firstLineICT reads the in-commit timestamp from the first line of a
// commit; complete is false when data (the whole file when whole is set)
// holds no whole first line.
func firstLineICT(data []byte, whole bool) (ts int64, ok, complete bool) {
	line, _, found := bytes.Cut(data, []byte{'\n'})
	if !found && !whole {
		return 0, false, false
	}
	var ll struct {
		CommitInfo *commitInfoHead `json:"commitInfo"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &ll) != nil || ll.CommitInfo == nil || ll.CommitInfo.InCommitTimestamp == nil {
		return 0, false, true
	}
	return *ll.CommitInfo.InCommitTimestamp, true, true
}
