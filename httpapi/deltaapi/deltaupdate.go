package deltaapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

// Update actions and requirement types of the Delta API.
const (
	actAddCommit        = "add-commit"
	actSetBackfilled    = "set-latest-backfilled-version"
	actSetProperties    = "set-properties"
	actRemoveProperties = "remove-properties"
	actSetProtocol      = "set-protocol"
	actSetColumns       = "set-columns"
	actSetPartitions    = "set-partition-columns"
	actSetComment       = "set-table-comment"
	actSetDomains       = "set-domain-metadata"
	actRemoveDomains    = "remove-domain-metadata"
	actSnapshotVersion  = "update-metadata-snapshot-version"

	reqAssertUUID = "assert-table-uuid"
	reqAssertETag = "assert-etag"
)

var knownActions = []string{actAddCommit, actSetBackfilled, actSetProperties, actRemoveProperties,
	actSetProtocol, actSetColumns, actSetPartitions, actSetComment, actSetDomains, actRemoveDomains, actSnapshotVersion}

// buildUpdate checks everything about an update request that needs no
// state (the shape rules, then each action's fields) and translates it
// into one fsm command. The order of checks follows UC's.
func buildUpdate(req *updateTableRequest, found bool) (*fsm.UpdateTable, error) {
	if !found {
		return nil, invalid("Request body is required.")
	}
	for _, r := range req.Requirements {
		if r.Type != reqAssertUUID && r.Type != reqAssertETag {
			return nil, invalid("Unknown requirement type: '%s'. Supported: [%s, %s]", r.Type, reqAssertUUID, reqAssertETag)
		}
	}
	for _, u := range req.Updates {
		if !slices.Contains(knownActions, u.Action) {
			return nil, invalid("Unknown update action: '%s'. Supported: [%s]", u.Action, strings.Join(knownActions, ", "))
		}
	}
	if len(req.Updates) == 0 {
		return nil, invalid("At least one update is required.")
	}
	cmd := &fsm.UpdateTable{}
	if err := applyRequirements(cmd, req.Requirements); err != nil {
		return nil, err
	}
	byAction := map[string]*tableUpdate{}
	for i := range req.Updates {
		u := &req.Updates[i]
		if byAction[u.Action] != nil {
			return nil, invalid("At most one %s is allowed per request.", u.Action)
		}
		byAction[u.Action] = u
	}
	if err := checkOverlaps(byAction); err != nil {
		return nil, err
	}
	for _, act := range knownActions {
		if u := byAction[act]; u != nil {
			if err := translateAction(cmd, u); err != nil {
				return nil, err
			}
		}
	}
	return cmd, nil
}

func applyRequirements(cmd *fsm.UpdateTable, reqs []requirement) error {
	var haveUUID, haveETag bool
	for _, r := range reqs {
		switch r.Type {
		case reqAssertUUID:
			if haveUUID {
				return invalid("At most one assert-table-uuid is allowed per request.")
			}
			haveUUID = true
			if r.UUID != nil {
				cmd.AssertUUID = *r.UUID
			}
		case reqAssertETag:
			if haveETag {
				return invalid("At most one assert-etag is allowed per request.")
			}
			haveETag = true
			cmd.AssertETag = r.ETag
		}
	}
	if !haveUUID {
		return invalid("assert-table-uuid requirement is required.")
	}
	return nil
}

// checkOverlaps rejects a request that both sets and removes a key or a domain.
func checkOverlaps(by map[string]*tableUpdate) error {
	if set, rm := by[actSetProperties], by[actRemoveProperties]; set != nil && rm != nil && rm.Removals != nil {
		var props map[string]json.RawMessage
		_ = json.Unmarshal(set.Updates, &props)
		var both []string
		for _, k := range *rm.Removals {
			if _, ok := props[k]; ok && !slices.Contains(both, k) {
				both = append(both, k)
			}
		}
		if len(both) > 0 {
			slices.Sort(both)
			return invalid("set-properties and remove-properties overlap on keys: [%s]", strings.Join(both, ", "))
		}
	}
	if set, rm := by[actSetDomains], by[actRemoveDomains]; set != nil && rm != nil && rm.Domains != nil {
		var doms map[string]json.RawMessage
		_ = json.Unmarshal(set.Updates, &doms)
		var both []string
		for _, d := range *rm.Domains {
			if _, ok := doms[d]; ok && !slices.Contains(both, d) {
				both = append(both, d)
			}
		}
		if len(both) > 0 {
			slices.Sort(both)
			return invalid("set-domain-metadata and remove-domain-metadata overlap on domains: [%s]", strings.Join(both, ", "))
		}
	}
	return nil
}

// translateAction validates one action's fields and sets it on cmd.
func translateAction(cmd *fsm.UpdateTable, u *tableUpdate) error {
	switch u.Action {
	case actAddCommit:
		return translateAddCommit(cmd, u)
	case actSetBackfilled:
		if u.LatestPublishedVersion == nil {
			return invalid("set-latest-backfilled-version requires latest-published-version.")
		}
		v := *u.LatestPublishedVersion
		if v < 0 {
			return invalid("set-latest-backfilled-version requires a non-negative latest-published-version, got %d.", v)
		}
		cmd.SetLatestBackfilled = &v
	case actSetProperties:
		props, err := decodeStringMap(u.Updates, "set-properties requires an updates map.")
		if err != nil {
			return err
		}
		cmd.SetProperties = &props
	case actRemoveProperties:
		if u.Removals == nil {
			return invalid("remove-properties requires a removals list.")
		}
		cmd.RemoveProperties = u.Removals
	case actSetProtocol:
		if u.Protocol == nil {
			return invalid("set-protocol requires a protocol.")
		}
		if err := checkDeltaVersions(u.Protocol, "protocol"); err != nil {
			return err
		}
		p := u.Protocol.toFSM()
		cmd.SetProtocol = &p
	case actSetColumns:
		return translateSetColumns(cmd, u)
	case actSetPartitions:
		if u.PartitionColumns == nil {
			return invalid("set-partition-columns requires a partition-columns list.")
		}
		cmd.SetPartitionColumns = u.PartitionColumns
	case actSetComment:
		if u.Comment == nil {
			return invalid("set-table-comment requires a comment.")
		}
		if err := httpapi.CheckComment("comment", u.Comment); err != nil {
			return err
		}
		cmd.SetTableComment = u.Comment
	case actSetDomains:
		return translateSetDomains(cmd, u)
	case actRemoveDomains:
		if u.Domains == nil {
			return invalid("remove-domain-metadata requires a domains list.")
		}
		for _, d := range *u.Domains {
			if !fsm.KnownDomain(d) {
				return invalid("Unknown domain in remove-domain-metadata: %s", d)
			}
		}
		cmd.RemoveDomainMetadata = u.Domains
	case actSnapshotVersion:
		if u.LastCommitVersion == nil {
			return invalid("update-metadata-snapshot-version requires last-commit-version.")
		}
		if u.LastCommitTimestampMs == nil {
			return invalid("update-metadata-snapshot-version requires last-commit-timestamp-ms.")
		}
		cmd.SetSnapshotVersion = &fsm.SnapshotVersion{LastCommitVersion: *u.LastCommitVersion, LastCommitTimestampMs: *u.LastCommitTimestampMs}
	}
	return nil
}

func decodeStringMap(raw json.RawMessage, missing string) (map[string]string, error) {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, invalid("%s", missing)
	}
	var m map[string]*string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid("Invalid JSON: updates must be an object of string values: %v", err)
	}
	props, nullKeys := splitNullProperties(m)
	if err := refuseNulls(nullKeys, "set-properties updates"); err != nil {
		return nil, err
	}
	return props, httpapi.CheckProperties("set-properties updates", props)
}

func translateSetColumns(cmd *fsm.UpdateTable, u *tableUpdate) error {
	if len(u.Columns) == 0 || string(bytes.TrimSpace(u.Columns)) == "null" {
		return invalid("set-columns requires a columns block.")
	}
	var probe struct {
		Fields *[]json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal(u.Columns, &probe); err == nil {
		if probe.Fields == nil {
			return invalid("set-columns requires columns.fields.")
		}
		if len(*probe.Fields) == 0 {
			return invalid("set-columns requires at least one column.")
		}
	}
	st, err := deltaschema.Parse("columns", u.Columns)
	if err != nil {
		return invalid("%s", err.Error())
	}
	if err := httpapi.CheckColumns("columns", st); err != nil {
		return err
	}
	cmd.SetColumns = &fsm.ColumnsSpec{Columns: st.Canonical(), Names: st.TopLevelNames()}
	return nil
}

func translateSetDomains(cmd *fsm.UpdateTable, u *tableUpdate) error {
	if len(u.Updates) == 0 || string(bytes.TrimSpace(u.Updates)) == "null" {
		return invalid("set-domain-metadata requires an updates block.")
	}
	var dm domainMetadata
	if err := json.Unmarshal(u.Updates, &dm); err != nil {
		return httpapi.JSONError(err)
	}
	if dm.Clustering == nil && dm.RowTracking == nil {
		return invalid("set-domain-metadata requires at least one domain entry. Supported domains: [%s, %s]", fsm.DomainClustering, fsm.DomainRowTracking)
	}
	if dm.RowTracking != nil && dm.RowTracking.RowIDHighWaterMark == nil {
		return invalid("domain-metadata.delta.rowTracking requires rowIdHighWaterMark.")
	}
	cmd.SetDomainMetadata = dm.toFSM()
	return checkClustering("updates", cmd.SetDomainMetadata)
}

func translateAddCommit(cmd *fsm.UpdateTable, u *tableUpdate) error {
	if u.Commit == nil {
		return invalid("add-commit requires a commit block.")
	}
	var ac fsm.AddCommit
	if u.Uniform != nil {
		ic, err := checkUniformShape(u.Uniform)
		if err != nil {
			return err
		}
		ac.Uniform = ic
	}
	cm, err := checkCommit(u.Commit)
	if err != nil {
		return err
	}
	ac.Commit = cm
	cmd.AddCommit = &ac
	return nil
}

// checkCommit validates a commit's fields (messages use UC's snake_case names).
func checkCommit(c *deltaCommit) (fsm.Commit, error) {
	positive := func(v *int64, name string) (int64, error) {
		if v == nil || *v <= 0 {
			return 0, invalid("Field must be positive: %s", name)
		}
		return *v, nil
	}
	var out fsm.Commit
	var err error
	if out.Version, err = positive(c.Version, "version"); err != nil {
		return out, err
	}
	if out.Timestamp, err = positive(c.Timestamp, "timestamp"); err != nil {
		return out, err
	}
	if c.FileName == nil || *c.FileName == "" {
		return out, invalid("Field can not be empty: file_name")
	}
	name := *c.FileName
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return out, invalid("Field must be a single file name without path separators: file_name")
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return out, invalid("Field must not contain control characters: file_name")
	}
	if len(name) > httpapi.MaxFileNameBytes {
		return out, invalid("Field must be a file name of at most %d bytes, got %d: file_name", httpapi.MaxFileNameBytes, len(name))
	}
	out.FileName = name
	if out.FileSize, err = positive(c.FileSize, "file_size"); err != nil {
		return out, err
	}
	if out.FileModTime, err = positive(c.FileModificationTimestamp, "file_modification_timestamp"); err != nil {
		return out, err
	}
	return out, nil
}

const maxMetadataLocation = 65535

// checkUniformShape validates the presence and form of UniForm metadata.
func checkUniformShape(u *uniform) (*fsm.IcebergUniform, error) {
	ic := u.Iceberg
	if ic == nil {
		return nil, invalid("uniform.iceberg is required when uniform is set.")
	}
	if ic.MetadataLocation == nil || strings.TrimSpace(*ic.MetadataLocation) == "" {
		return nil, invalid("uniform.iceberg.metadata-location is required when uniform is set.")
	}
	if ic.ConvertedDeltaVersion == nil {
		return nil, invalid("uniform.iceberg.converted-delta-version is required when uniform is set.")
	}
	if ic.ConvertedDeltaTimestamp == nil {
		return nil, invalid("uniform.iceberg.converted-delta-timestamp is required when uniform is set.")
	}
	if len(*ic.MetadataLocation) > maxMetadataLocation {
		return nil, invalid("uniform.iceberg.metadata-location length %d exceeds the maximum allowed %d.", len(*ic.MetadataLocation), maxMetadataLocation)
	}
	loc, err := storage.Normalize(*ic.MetadataLocation)
	if err != nil {
		return nil, invalid("uniform.iceberg.metadata-location: %v", err)
	}
	return &fsm.IcebergUniform{MetadataLocation: loc, ConvertedDeltaVersion: *ic.ConvertedDeltaVersion,
		ConvertedDeltaTimestamp: *ic.ConvertedDeltaTimestamp, BaseConvertedDeltaVersion: ic.BaseConvertedDeltaVersion}, nil
}

// publishedName is a version's file name in _delta_log.
func publishedName(v int64) string { return fmt.Sprintf("_delta_log/%020d.json", v) }
