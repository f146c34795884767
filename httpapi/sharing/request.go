package sharing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// flexInt is a long the clients send as a JSON number or a numeric
// string ({"version":"1"}).
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return malformed("Not a numeric value: %s", b)
	}
	*f = flexInt(n)
	return nil
}

func (f *flexInt) val() int64 { return int64(*f) }

// queryRequest is the body of POST .../query; unknown fields are ignored.
type queryRequest struct {
	PredicateHints      []string `json:"predicateHints"`
	JSONPredicateHints  *string  `json:"jsonPredicateHints"`
	LimitHint           *flexInt `json:"limitHint"`
	Version             *flexInt `json:"version"`
	Timestamp           *string  `json:"timestamp"`
	StartingVersion     *flexInt `json:"startingVersion"`
	EndingVersion       *flexInt `json:"endingVersion"`
	MaxFiles            *flexInt `json:"maxFiles"`
	PageToken           *string  `json:"pageToken"`
	IncludeRefreshToken *bool    `json:"includeRefreshToken"`
	RefreshToken        *string  `json:"refreshToken"`
}

// bindQuery decodes the body; an empty body is refused (clients send {}).
func bindQuery(c echo.Context) (*queryRequest, error) {
	var req queryRequest
	found, err := httpapi.BindJSON(c, &req)
	var ke *httpapi.KindError
	var de *fsm.Error
	switch {
	case errors.As(err, &ke):
		return nil, err
	case errors.As(err, &de):
		return nil, malformed("%s", de.Message)
	case err != nil:
		return nil, err
	case !found:
		return nil, malformed("The request body must be a JSON object ({} for no options).")
	}
	return &req, req.validate()
}

func (r *queryRequest) validate() error {
	if count(r.Version != nil, r.Timestamp != nil, r.StartingVersion != nil) > 1 {
		return invalid("Please only provide one of: version,timestamp,startingVersion")
	}
	travel := r.Version != nil || r.Timestamp != nil || r.StartingVersion != nil
	switch {
	case r.Version != nil && r.Version.val() < 0:
		return invalid("table version cannot be negative")
	case r.StartingVersion != nil && r.StartingVersion.val() < 0:
		return invalid("startingVersion cannot be negative")
	case r.EndingVersion != nil && r.StartingVersion == nil:
		return invalid("endingVersion is only allowed with startingVersion")
	case r.MaxFiles != nil && (r.MaxFiles.val() <= 0 || r.MaxFiles.val() > math.MaxInt32):
		return invalid("maxFiles must be positive and at most %d", math.MaxInt32)
	case r.LimitHint != nil && r.LimitHint.val() < 0:
		return invalid("limitHint cannot be negative")
	case r.refreshWanted() && (travel || r.PageToken != nil):
		return invalid("includeRefreshToken is only allowed on the first page of a query of the latest snapshot")
	case r.RefreshToken != nil && (travel || r.PageToken != nil):
		return invalid("refreshToken cannot be combined with version, timestamp, startingVersion or pageToken")
	}
	return nil
}

func (r *queryRequest) refreshWanted() bool {
	return r.IncludeRefreshToken != nil && *r.IncludeRefreshToken
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// fingerprint identifies what a query asks for, so that a page token is
// only honoured by the query that issued it.
func fingerprint(parts ...any) string {
	raw, _ := json.Marshal(parts)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

// pageClaim is a page token: the pinned versions, where the next page
// starts and the fingerprint of the query.
type pageClaim struct {
	Table   string `json:"t"`
	Version int64  `json:"v"`
	End     int64  `json:"e,omitempty"`
	Offset  int    `json:"o"`
	Params  string `json:"p"`
	Expires int64  `json:"x"`
}

// refreshClaim is a refresh token: the pinned snapshot of a query.
type refreshClaim struct {
	Table   string `json:"t"`
	Version int64  `json:"v"`
	Params  string `json:"p"`
	Expires int64  `json:"x"`
}

const (
	pagePurpose    = "page"
	refreshPurpose = "refresh"
	pageTokenTTL   = 72 * time.Hour
	refreshTTL     = time.Hour
)

// readPage verifies a page token against the table and the query.
func (tr *tableRequest) readPage(tok, params string) (*pageClaim, error) {
	var pc pageClaim
	switch {
	case !open(tr.key, pagePurpose, tok, &pc):
		return nil, invalid("Error decoding the page token: it is not a page token this server issued.")
	case pc.Table != tr.table.ID:
		return nil, invalid("The table specified in the page token does not match the table being queried.")
	case pc.Params != params:
		return nil, invalid("Query parameter mismatch detected: a page token must be sent with the parameters of the query that returned it.")
	case time.Now().UnixMilli() >= pc.Expires:
		return nil, invalid("The page token has expired; start the query again.")
	}
	return &pc, nil
}

func (tr *tableRequest) readRefresh(tok, params string) (*refreshClaim, error) {
	var rc refreshClaim
	switch {
	case !open(tr.key, refreshPurpose, tok, &rc) || rc.Table != tr.table.ID || rc.Params != params:
		return nil, invalid("The refresh token is not valid for this query.")
	case time.Now().UnixMilli() >= rc.Expires:
		return nil, invalid("The refresh token has expired; start the query again.")
	}
	return &rc, nil
}

func (tr *tableRequest) pageToken(version, end int64, offset int, params string) string {
	return seal(tr.key, pagePurpose, pageClaim{Table: tr.table.ID, Version: version, End: end, Offset: offset,
		Params: params, Expires: time.Now().Add(pageTokenTTL).UnixMilli()})
}

func (tr *tableRequest) refreshToken(version int64, params string) string {
	return seal(tr.key, refreshPurpose, refreshClaim{Table: tr.table.ID, Version: version, Params: params,
		Expires: time.Now().Add(refreshTTL).UnixMilli()})
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ptr[T any](v T) *T { return &v }
