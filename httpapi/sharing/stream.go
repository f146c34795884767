package sharing

import (
	"context"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltalog"
)

// change is one data line of a streaming or change-feed answer: a file
// added, removed or holding change rows, or a new metadata, at a
// commit's version and timestamp.
type change struct {
	version, ts int64
	add         *deltalog.AddFile
	remove      *deltalog.RemoveFile
	cdc         *deltalog.CDCFile
	meta        *deltalog.Metadata
}

// picker chooses the lines one commit contributes.
type picker func(cm *deltalog.Commit, first bool) []change

// streamPick is /query with startingVersion: every add and remove that
// changes data, and every later metadata; no change-data files.
func streamPick(cm *deltalog.Commit, first bool) []change {
	var out []change
	for _, a := range cm.Actions {
		switch {
		case a.Add != nil && a.Add.DataChange:
			out = append(out, change{add: a.Add})
		case a.Remove != nil && a.Remove.DataChange:
			out = append(out, change{remove: a.Remove})
		case a.Metadata != nil && !first:
			out = append(out, change{meta: a.Metadata})
		}
	}
	return out
}

// cdfPick is /changes: a commit's change-data files when it has any,
// else its data-changing adds and removes; later metadata on request.
func cdfPick(historicalMeta bool) picker {
	return func(cm *deltalog.Commit, first bool) []change {
		hasCDC := false
		for _, a := range cm.Actions {
			hasCDC = hasCDC || a.CDC != nil
		}
		var out []change
		for _, a := range cm.Actions {
			switch {
			case a.CDC != nil:
				out = append(out, change{cdc: a.CDC})
			case !hasCDC && a.Add != nil && a.Add.DataChange:
				out = append(out, change{add: a.Add})
			case !hasCDC && a.Remove != nil && a.Remove.DataChange:
				out = append(out, change{remove: a.Remove})
			case a.Metadata != nil && historicalMeta && !first:
				out = append(out, change{meta: a.Metadata})
			}
		}
		return out
	}
}

// collect reads commits start..end and picks their lines.
func (tr *tableRequest) collect(ctx context.Context, start, end int64, pick picker) ([]change, error) {
	var out []change
	for v := start; v <= end; v++ {
		cm, err := tr.log.Commit(ctx, v)
		if err != nil {
			return nil, err
		}
		for _, ch := range pick(cm, v == start) {
			ch.version, ch.ts = cm.Version, cm.Timestamp
			out = append(out, ch)
		}
	}
	fillRemoves(out)
	return out, nil
}

// fillRemoves gives removes without size or partition values those of
// the add of the same file earlier in the range (both are optional in a
// remove action, required in the protocol's line).
func fillRemoves(chs []change) {
	adds := map[string]*deltalog.AddFile{}
	for i := range chs {
		switch ch := &chs[i]; {
		case ch.add != nil:
			adds[ch.add.Path] = ch.add
		case ch.remove != nil && (ch.remove.Size == nil || ch.remove.PartitionValues == nil):
			rm := *ch.remove
			if a, ok := adds[rm.Path]; ok && rm.Size == nil {
				rm.Size = ptr(a.Size)
			}
			if a, ok := adds[rm.Path]; ok && rm.PartitionValues == nil {
				rm.PartitionValues = a.PartitionValues
			}
			ch.remove = &rm
		}
	}
}

// changeLine renders one change in the answer's format.
func changeLine(sign *urlSigner, tr *tableRequest, ch *change, delta bool) (any, error) {
	v, ts := ptr(ch.version), ptr(ch.ts)
	if ch.meta != nil {
		return metadataLine{MetaData: metadataOf(tr, ch.meta, delta, v, nil, nil)}, nil
	}
	if delta {
		return deltaChangeLine(sign, tr, ch, v, ts)
	}
	kind, pf, err := parquetChange(sign, tr, ch)
	if err != nil {
		return nil, err
	}
	pf.Version, pf.Timestamp = v, ts
	return map[string]parquetFile{kind: pf}, nil
}

func parquetChange(sign *urlSigner, tr *tableRequest, ch *change) (string, parquetFile, error) {
	switch {
	case ch.add != nil:
		pf, err := parquetFileOf(sign, tr, ch.add.Path, ch.add.Key(), ch.add.PartitionValues, ch.add.Size, ch.add.Stats)
		return "add", pf, err
	case ch.remove != nil:
		rm := ch.remove
		var size int64
		if rm.Size != nil {
			size = *rm.Size
		}
		pf, err := parquetFileOf(sign, tr, rm.Path, rm.Key(), rm.PartitionValues, size, "")
		return "remove", pf, err
	}
	pf, err := parquetFileOf(sign, tr, ch.cdc.Path, ch.cdc.Path, ch.cdc.PartitionValues, ch.cdc.Size, "")
	return "cdf", pf, err
}

func deltaChangeLine(sign *urlSigner, tr *tableRequest, ch *change, v, ts *int64) (any, error) {
	df := deltaFile{Version: v, Timestamp: ts, ExpirationTimestamp: sign.expires.UnixMilli()}
	var err error
	switch {
	case ch.add != nil:
		df.ID = fileID(ch.add.Key(), true)
		df.DeltaSingleAction.Add, err = signedAdd(sign, tr, ch.add)
	case ch.remove != nil:
		df.ID = fileID(ch.remove.Key(), true)
		df.DeltaSingleAction.Remove, err = signedRemove(sign, tr, ch.remove)
	default:
		df.ID = fileID(ch.cdc.Path, true)
		cdc := *ch.cdc
		cdc.Path, err = sign.sign(tr.log.FileLocation(ch.cdc.Path))
		df.DeltaSingleAction.CDC = &cdc
	}
	if err != nil {
		return nil, err
	}
	return map[string]deltaFile{"file": df}, nil
}

// streamQuery answers /query with startingVersion (and endingVersion).
func (s *Server) streamQuery(c echo.Context, tr *tableRequest, req *queryRequest) error {
	if err := tr.needHistory(); err != nil {
		return err
	}
	start := req.StartingVersion.val()
	end, err := tr.streamEnd(start, req.EndingVersion)
	if err != nil {
		return err
	}
	params := fingerprint("stream", start, req.EndingVersion, tr.caps.formats)
	offset := 0
	if req.PageToken != nil {
		pc, err := tr.readPage(*req.PageToken, params)
		if err != nil {
			return err
		}
		end, offset = pc.End, pc.Offset
	}
	return s.answerChanges(c, tr, changeQuery{start: start, end: end, headAt: start, offset: offset,
		maxFiles: req.MaxFiles, params: params, pick: streamPick})
}

// streamEnd is the last version a stream covers: endingVersion, or the
// latest.
func (tr *tableRequest) streamEnd(start int64, ending *flexInt) (int64, error) {
	latest := tr.log.Latest()
	if err := tr.checkStart(start); err != nil {
		return 0, err
	}
	if start > latest {
		return 0, invalid("Provided Start version(%d) for reading change data is invalid. Start version cannot be greater than the latest version of the table(%d).", start, latest)
	}
	if ending == nil {
		return latest, nil
	}
	switch e := ending.val(); {
	case e < start:
		return 0, invalid("CDF range from start %d to end %d was invalid. End cannot be before start.", start, e)
	case e > latest:
		return 0, invalid("End version cannot be greater than the latest version of the table(%d).", latest)
	default:
		return e, nil
	}
}

// changeQuery is a streaming or change-feed answer to write.
type changeQuery struct {
	start, end, headAt int64
	offset             int
	maxFiles           *flexInt
	params             string
	pick               picker
}

// answerChanges writes the head (the snapshot at headAt, naming its
// version), one page of changes, and the end-stream action when paged
// or asked for. The header names the start version.
func (s *Server) answerChanges(c echo.Context, tr *tableRequest, q changeQuery) error {
	ctx := c.Request().Context()
	snap, delta, err := s.snapshotIn(c, tr, q.headAt)
	if err != nil {
		return err
	}
	chs, err := tr.collect(ctx, q.start, q.end, q.pick)
	if err != nil {
		return s.logError(c, err)
	}
	sign := s.signer(c, tr)
	lines, err := renderChanges(sign, tr, chs, q, delta)
	if err != nil {
		return s.logError(c, err)
	}
	endStream := q.maxFiles != nil || tr.caps.endStream
	out := startNDJSON(c, q.start, delta, endStream)
	if err := out.head(tr, snap, delta, true, false); err != nil {
		return err
	}
	for _, l := range lines {
		if err := out.line(l); err != nil {
			return err
		}
	}
	if endStream {
		es := endStreamAction{MinURLExpirationTimestamp: ptr(sign.expires.UnixMilli())}
		if end := pageEnd(q.offset, len(chs), q.maxFiles); end < len(chs) {
			es.NextPageToken = tr.pageToken(q.start, q.end, end, q.params)
		}
		if err := out.line(map[string]endStreamAction{"endStreamAction": es}); err != nil {
			return err
		}
	}
	return out.flush()
}

func renderChanges(sign *urlSigner, tr *tableRequest, chs []change, q changeQuery, delta bool) ([]any, error) {
	end := pageEnd(q.offset, len(chs), q.maxFiles)
	lines := make([]any, 0, max(0, end-q.offset))
	for i := q.offset; i < end; i++ {
		l, err := changeLine(sign, tr, &chs[i], delta)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// changes answers GET .../changes: the table's change data feed between
// two versions or timestamps.
func (s *Server) changes(c echo.Context) error {
	cq, err := parseChanges(c)
	if err != nil {
		return err
	}
	tr, err := s.openTable(c)
	if err != nil {
		return err
	}
	if !tr.history() {
		return invalid("cdf is not enabled on table %s", tr.dotted())
	}
	start, end, err := tr.cdfRange(c, cq)
	if err != nil {
		return err
	}
	params := fingerprint("changes", cq.startingVersion, cq.startingTimestamp, cq.endingVersion, cq.endingTimestamp, cq.historical, tr.caps.formats)
	offset := 0
	if cq.pageToken != "" {
		pc, err := tr.readPage(cq.pageToken, params)
		if err != nil {
			return err
		}
		start, end, offset = pc.Version, pc.End, pc.Offset
	}
	if err := tr.checkCDF(c.Request().Context(), start, end); err != nil {
		return err
	}
	headAt := tr.log.Latest()
	if cq.historical {
		headAt = start
	}
	return s.answerChanges(c, tr, changeQuery{start: start, end: end, headAt: headAt, offset: offset,
		maxFiles: cq.maxFiles, params: params, pick: cdfPick(cq.historical)})
}

// changesParams are the query parameters of /changes.
type changesParams struct {
	startingVersion, startingTimestamp, endingVersion, endingTimestamp, pageToken string
	historical                                                                    bool
	maxFiles                                                                      *flexInt
}

func parseChanges(c echo.Context) (*changesParams, error) {
	q := c.QueryParams()
	cq := &changesParams{startingVersion: q.Get("startingVersion"), startingTimestamp: q.Get("startingTimestamp"),
		endingVersion: q.Get("endingVersion"), endingTimestamp: q.Get("endingTimestamp"), pageToken: q.Get("pageToken")}
	switch {
	case (cq.startingVersion == "") == (cq.startingTimestamp == ""):
		return nil, invalid("Please provide exactly one of startingVersion and startingTimestamp.")
	case cq.endingVersion != "" && cq.endingTimestamp != "":
		return nil, invalid("Please provide at most one of endingVersion and endingTimestamp.")
	}
	var err error
	if h := q.Get("includeHistoricalMetadata"); h != "" {
		if cq.historical, err = strconv.ParseBool(strings.ToLower(h)); err != nil {
			return nil, invalid("includeHistoricalMetadata must be true or false, got '%s'", h)
		}
	}
	if m := q.Get("maxFiles"); m != "" {
		n, err := strconv.ParseInt(m, 10, 32)
		if err != nil || n <= 0 {
			return nil, invalid("maxFiles must be a positive number, got '%s'", m)
		}
		cq.maxFiles = ptr(flexInt(n))
	}
	return cq, nil
}

// cdfRange resolves the start and end of a change feed.
func (tr *tableRequest) cdfRange(c echo.Context, cq *changesParams) (int64, int64, error) {
	start, err := tr.cdfStart(c, cq)
	if err != nil {
		return 0, 0, err
	}
	latest := tr.log.Latest()
	end := latest
	switch {
	case cq.endingVersion != "":
		e, perr := strconv.ParseInt(cq.endingVersion, 10, 64)
		if perr != nil {
			return 0, 0, invalid("endingVersion must be a number, got '%s'", cq.endingVersion)
		}
		end = min(e, latest)
	case cq.endingTimestamp != "":
		if end, err = tr.cdfEndAt(c, cq.endingTimestamp); err != nil {
			return 0, 0, err
		}
	}
	if start > latest {
		return 0, 0, invalid("Provided Start version(%d) for reading change data is invalid. Start version cannot be greater than the latest version of the table(%d).", start, latest)
	}
	if end < start {
		return 0, 0, invalid("CDF range from start %d to end %d was invalid. End cannot be before start.", start, end)
	}
	return start, end, tr.checkStart(start)
}

func (tr *tableRequest) cdfStart(c echo.Context, cq *changesParams) (int64, error) {
	if cq.startingTimestamp != "" {
		return tr.versionAtOrAfter(c, cq.startingTimestamp, "startingTimestamp")
	}
	v, err := strconv.ParseInt(cq.startingVersion, 10, 64)
	if err != nil || v < 0 {
		return 0, invalid("startingVersion must be a non-negative number, got '%s'", cq.startingVersion)
	}
	return v, nil
}

// cdfEndAt is the latest version committed at or before an ending
// timestamp (the latest version for a timestamp after it).
func (tr *tableRequest) cdfEndAt(c echo.Context, ts string) (int64, error) {
	ms, err := parseTimestamp("endingTimestamp", ts)
	if err != nil {
		return 0, err
	}
	ctx := c.Request().Context()
	if v, err := tr.log.VersionAt(ctx, ms); err == nil {
		return v, nil
	}
	last, err := tr.log.Timestamp(ctx, tr.log.Latest())
	if err == nil && ms >= last {
		return tr.log.Latest(), nil
	}
	return 0, invalid("The provided endingTimestamp (%s) is before the earliest version of the table.", ts)
}

// checkCDF requires the change data feed on at the start and never
// turned off within the range.
func (tr *tableRequest) checkCDF(ctx context.Context, start, end int64) error {
	snap, err := tr.log.Snapshot(ctx, start)
	if err != nil {
		return err
	}
	off := func(m *deltalog.Metadata) bool {
		return !strings.EqualFold(m.Configuration["delta.enableChangeDataFeed"], "true")
	}
	if off(&snap.Metadata) {
		return invalid("Error getting change data for range [%d, %d] as change data was not recorded for version [%d]", start, end, start)
	}
	for v := start + 1; v <= end; v++ {
		cm, err := tr.log.Commit(ctx, v)
		if err != nil {
			return err
		}
		for _, a := range cm.Actions {
			if a.Metadata != nil && off(a.Metadata) {
				return invalid("Error getting change data for range [%d, %d] as change data was not recorded for version [%d]", start, end, v)
			}
		}
	}
	return nil
}
