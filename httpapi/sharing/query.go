package sharing

import (
	"context"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltalog"
)

// metadata answers GET .../metadata: the protocol and metadata lines of
// the latest snapshot, or of one version or timestamp (history
// required), in the negotiated format.
func (s *Server) metadata(c echo.Context) error {
	tr, err := s.openTable(c)
	if err != nil {
		return err
	}
	v, travel, err := tr.requestedVersion(c, c.QueryParam("version"), c.QueryParam("timestamp"))
	if err != nil {
		return err
	}
	snap, delta, err := s.snapshotIn(c, tr, v)
	if err != nil {
		return err
	}
	out := startNDJSON(c, snap.Version, delta, false)
	if err := out.head(tr, snap, delta, travel, true); err != nil {
		return err
	}
	return out.flush()
}

// requestedVersion resolves the version and timestamp parameters of
// /metadata (strings from the query) to a snapshot version.
func (tr *tableRequest) requestedVersion(c echo.Context, version, timestamp string) (int64, bool, error) {
	switch {
	case version != "" && timestamp != "":
		return 0, false, invalid("Please only provide one of: version,timestamp")
	case version != "":
		var v flexInt
		if err := v.UnmarshalJSON([]byte(version)); err != nil {
			return 0, false, invalid("version must be a number, got '%s'", version)
		}
		n, err := tr.travelTo(v.val())
		return n, true, err
	case timestamp != "":
		n, err := tr.versionAt(c, timestamp)
		return n, true, err
	}
	return tr.log.Latest(), false, nil
}

// travelTo checks a requested version: history shared, at or after the
// share's start version, and within the table's versions.
func (tr *tableRequest) travelTo(v int64) (int64, error) {
	if err := tr.needHistory(); err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, invalid("table version cannot be negative")
	}
	if v > tr.log.Latest() || v < tr.log.Earliest() {
		return 0, invalid("Cannot load table version %d: the table has versions %d to %d.", v, tr.log.Earliest(), tr.log.Latest())
	}
	return v, tr.checkStart(v)
}

// versionAt resolves a time-travel timestamp: the version active then.
func (tr *tableRequest) versionAt(c echo.Context, ts string) (int64, error) {
	if err := tr.needHistory(); err != nil {
		return 0, err
	}
	ms, err := parseTimestamp("timestamp", ts)
	if err != nil {
		return 0, err
	}
	v, err := tr.log.VersionAt(c.Request().Context(), ms)
	if err != nil {
		return 0, invalid("The provided timestamp (%s) is before the earliest version available or after the latest version of the table.", ts)
	}
	return v, tr.checkStart(v)
}

// head writes the protocol and metaData lines of a snapshot. version
// says whether the metaData line names its version; sizes whether it
// carries the snapshot's size and file count.
func (n *ndjson) head(tr *tableRequest, snap *deltalog.Snapshot, delta, version, sizes bool) error {
	var v, size, files *int64
	if version {
		v = ptr(snap.Version)
	}
	if sizes {
		size, files = ptr(snapshotBytes(snap)), ptr(int64(len(snap.Files)))
	}
	if err := n.line(protocolLine{Protocol: protocolOf(snap.Protocol, delta)}); err != nil {
		return err
	}
	return n.line(metadataLine{MetaData: metadataOf(tr, &snap.Metadata, delta, v, size, files)})
}

func protocolOf(p deltalog.Protocol, delta bool) any {
	if delta {
		return deltaProtocolLine{DeltaProtocol: recipientProtocol(p)}
	}
	return parquetProtocol{MinReaderVersion: 1}
}

func metadataOf(tr *tableRequest, m *deltalog.Metadata, delta bool, v, size, files *int64) any {
	if delta {
		dm := *m
		if dm.Format.Options == nil {
			dm.Format.Options = map[string]string{}
		}
		return deltaMetadata{DeltaMetadata: dm, Version: v, Size: size, NumFiles: files}
	}
	conf := map[string]string{}
	if tr.history() && strings.EqualFold(m.Configuration["delta.enableChangeDataFeed"], "true") {
		conf["enableChangeDataFeed"] = "true"
	}
	return parquetMetadata{ID: m.ID, Name: m.Name, Description: m.Description, Format: deltalog.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: parquetSchema(m.SchemaString), PartitionColumns: nonNilStrings(m.PartitionColumns),
		Configuration: conf, Version: v, Size: size, NumFiles: files}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func snapshotBytes(snap *deltalog.Snapshot) int64 {
	var n int64
	for i := range snap.Files {
		n += snap.Files[i].Size
	}
	return n
}

// query answers POST .../query: a snapshot's files, or with
// startingVersion the data changes since a version.
func (s *Server) query(c echo.Context) error {
	req, err := bindQuery(c)
	if err != nil {
		return err
	}
	tr, err := s.openTable(c)
	if err != nil {
		return err
	}
	if req.StartingVersion != nil {
		return s.streamQuery(c, tr, req)
	}
	return s.snapshotQuery(c, tr, req)
}

// snapshotQuery serves the latest snapshot, a version or a timestamp;
// pages and refreshes stay on the snapshot the first page read.
func (s *Server) snapshotQuery(c echo.Context, tr *tableRequest, req *queryRequest) error {
	params := fingerprint("snapshot", req.JSONPredicateHints, req.PredicateHints, req.LimitHint, req.Version, req.Timestamp, tr.caps.formats)
	v, offset, err := tr.snapshotVersion(c, req, params)
	if err != nil {
		return err
	}
	snap, delta, err := s.snapshotIn(c, tr, v)
	if err != nil {
		return err
	}
	files := s.selectFiles(c.Request().Context(), snap, req)
	end := pageEnd(offset, len(files), req.MaxFiles)
	travel := req.Version != nil || req.Timestamp != nil
	sign := s.signer(c, tr)
	lines := make([]any, 0, max(0, end-offset))
	for i := offset; i < end; i++ {
		line, err := snapshotFileLine(sign, tr, &files[i], delta, travel, snap)
		if err != nil {
			return s.logError(c, err)
		}
		lines = append(lines, line)
	}
	endStream := req.MaxFiles != nil || tr.caps.endStream || req.refreshWanted()
	out := startNDJSON(c, snap.Version, delta, endStream)
	if err := out.head(tr, snap, delta, travel, false); err != nil {
		return err
	}
	for _, line := range lines {
		if err := out.line(line); err != nil {
			return err
		}
	}
	if endStream {
		es := endStreamAction{MinURLExpirationTimestamp: ptr(sign.expires.UnixMilli())}
		if end < len(files) {
			es.NextPageToken = tr.pageToken(snap.Version, 0, end, params)
		}
		if req.refreshWanted() {
			es.RefreshToken = tr.refreshToken(snap.Version, params)
		}
		if err := out.line(map[string]endStreamAction{"endStreamAction": es}); err != nil {
			return err
		}
	}
	return out.flush()
}

// snapshotVersion decides which snapshot a query reads and where its
// page starts.
func (tr *tableRequest) snapshotVersion(c echo.Context, req *queryRequest, params string) (int64, int, error) {
	switch {
	case req.PageToken != nil:
		pc, err := tr.readPage(*req.PageToken, params)
		if err != nil {
			return 0, 0, err
		}
		return pc.Version, pc.Offset, nil
	case req.RefreshToken != nil:
		rc, err := tr.readRefresh(*req.RefreshToken, params)
		if err != nil {
			return 0, 0, err
		}
		return rc.Version, 0, nil
	case req.Version != nil:
		v, err := tr.travelTo(req.Version.val())
		return v, 0, err
	case req.Timestamp != nil:
		v, err := tr.versionAt(c, *req.Timestamp)
		return v, 0, err
	}
	return tr.log.Latest(), 0, nil
}

// pageEnd is where a page that starts at offset ends.
func pageEnd(offset, n int, maxFiles *flexInt) int {
	if offset > n {
		return n
	}
	if maxFiles == nil {
		return n
	}
	return min(n, offset+int(maxFiles.val()))
}

// selectFiles applies the hints: jsonPredicateHints and predicateHints
// (the SQL form) skip files that cannot match, each as far as it can be
// used; without either, limitHint stops once enough rows are in.
func (s *Server) selectFiles(ctx context.Context, snap *deltalog.Snapshot, req *queryRequest) []deltalog.AddFile {
	files := snap.Files
	if !req.predicated() {
		if req.LimitHint == nil {
			return files
		}
		return limitFiles(files, req.LimitHint.val())
	}
	keeps := s.hintFilters(ctx, snap, req)
	if len(keeps) == 0 {
		return files
	}
	return slices.DeleteFunc(slices.Clone(files), func(f deltalog.AddFile) bool {
		hf := hintFile{PartitionValues: f.PartitionValues, Stats: f.Stats}
		for _, keep := range keeps {
			if !keep(hf) {
				return true
			}
		}
		return false
	})
}

// predicated reports whether the query sends a predicate hint.
func (r *queryRequest) predicated() bool {
	return r.JSONPredicateHints != nil && *r.JSONPredicateHints != "" || len(r.PredicateHints) > 0
}

// hintFilters compiles the query's predicate hints; what cannot be used
// is logged and left out.
func (s *Server) hintFilters(ctx context.Context, snap *deltalog.Snapshot, req *queryRequest) []func(hintFile) bool {
	var keeps []func(hintFile) bool
	columns := hintColumns(&snap.Metadata)
	if req.JSONPredicateHints != nil && *req.JSONPredicateHints != "" {
		keep, skipped := compileHint(*req.JSONPredicateHints, columns)
		if keep == nil {
			s.log.DebugContext(ctx, "jsonPredicateHints not used", "reason", skipped)
		} else {
			keeps = append(keeps, keep)
		}
	}
	if len(req.PredicateHints) > 0 {
		keep, skipped := compileSQLHints(req.PredicateHints, columns)
		if len(skipped) > 0 {
			s.log.DebugContext(ctx, "predicateHints not all used", "reasons", skipped)
		}
		if keep != nil {
			keeps = append(keeps, keep)
		}
	}
	return keeps
}

// limitFiles keeps files in order until their rows reach limit; a file
// without stats counts no rows.
func limitFiles(files []deltalog.AddFile, limit int64) []deltalog.AddFile {
	var rows int64
	for i := range files {
		if rows >= limit {
			return files[:i]
		}
		if n, ok := files[i].NumRecords(); ok {
			rows += n
			if dv := files[i].DeletionVector; dv != nil {
				rows -= dv.Cardinality
			}
		}
	}
	return files
}

// snapshotIn reads the table's snapshot at version v and negotiates the
// answer's format for it (delta says which).
func (s *Server) snapshotIn(c echo.Context, tr *tableRequest, v int64) (snap *deltalog.Snapshot, delta bool, err error) {
	if snap, err = tr.log.Snapshot(c.Request().Context(), v); err != nil {
		return nil, false, s.logError(c, err)
	}
	delta, err = chooseFormat(tr.caps, &snap.Protocol, &snap.Metadata)
	return snap, delta, err
}
