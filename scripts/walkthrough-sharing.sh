#!/usr/bin/env bash
# The Delta Sharing walk-through of docs/delta-sharing.md, runnable:
#   scripts/walkthrough-sharing.sh [BASE_URL]     (default http://127.0.0.1:8080)
# The provider writes a small Delta table (a Parquet file and the commit
# that adds it) in a new directory under ${TMPDIR:-/tmp}, registers it,
# shares it and makes a recipient; the recipient downloads its profile,
# lists and queries the table and downloads the file through its signed
# URL. Names carry a suffix unique to the run (trips_<run>,
# partner_<run>). The node must reach the directory as file://: run it on
# the node's host. It exits non-zero as soon as an answer is not the
# expected one. With --auth=token set RAFTCAT_TOKEN (the provider's);
# against HTTPS with a CA of your own, RAFTCAT_CA_FILE.
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
. "$(dirname "$0")/walkthrough-lib.sh"

# >>> steps: docs/delta-sharing.md shows the blocks below; a test keeps the two equal
UC=$BASE/api/2.1/unity-catalog
SHARE=trips_$RUN RECIPIENT=partner_$RUN TABLE=trips_$RUN
DIR=$(mktemp -d "${TMPDIR:-/tmp}/raftcat-sharing.XXXXXX")   # the table's files, on the node's host

# 1. A Delta table with real files: one Parquet file (3 rows: id, city) and commit 0 adding it.
mkdir -p "$DIR/trips/_delta_log"
base64 -d >"$DIR/trips/part-00000.parquet" <<'PARQUET'
UEFSMRUAFTAVMCwVBhUAFQYVBhwAAAABAAAAAAAAAAIAAAAAAAAAAwAAAAAAAAAVABVCFUIsFQYVABUGFQYcAAAAAgAAAAYB
BgAAAExpc2JvbgQAAABPc2xvBQAAAFF1aXRvFQQZPEgGc2NoZW1hFQQAFQQlABgCaWQlJEysE0ARAAAAFQwlAhgEY2l0eSUA
TBwAAAAWBhkcGSwmCBwVBBklAAYZGAJpZBUAFgYWVhZWJghJHBUAFQAVAgAAACZeHBUMGSUABhkYBGNpdHkVABYGFmgWaCZe
SRwVABUAFQIAAAAWvgEWBiYIFr4BFAAAGQwYB3JhZnRjYXQZLBwAABwAAAChAAAAUEFSMQ==
PARQUET
cat >"$DIR/trips/_delta_log/00000000000000000000.json" <<JSON
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"0b6c5e1e-7d4f-4c51-9d43-3b1c8e0f6a21","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":false,\"metadata\":{}},{\"name\":\"city\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1700000000000}}
{"add":{"path":"part-00000.parquet","partitionValues":{},"size":$(wc -c <"$DIR/trips/part-00000.parquet"),"modificationTime":1700000000000,"dataChange":true,"stats":"{\"numRecords\":3}"}}
JSON

# 2. Provider: register it as an external table, share it, make a recipient and grant it the share.
api -X POST "$UC/tables" -d '{"name":"'$TABLE'","catalog_name":"unity","schema_name":"default",
  "table_type":"EXTERNAL","data_source_format":"DELTA","storage_location":"file://'$DIR'/trips"}'
api -X POST "$UC/shares" -d '{"name":"'$SHARE'","comment":"for partners"}'
api -X PATCH "$UC/shares/$SHARE" -d '{"updates":[{"action":"ADD","data_object":{"name":"unity.default.'$TABLE'",
  "data_object_type":"TABLE","shared_as":"default.trips","history_data_sharing_status":"ENABLED"}}]}'
LINK=$(api -X POST "$UC/recipients" -d '{"name":"'$RECIPIENT'","authentication_type":"TOKEN"}' | field activation_url)
api -X PATCH "$UC/shares/$SHARE/permissions" -d '{"changes":[{"principal":"'$RECIPIENT'","add":["SELECT"]}]}'

# 3. Recipient: download the profile, once (the provider sends LINK to the recipient).
anonymous "$LINK" >"$DIR/$RECIPIENT.share"
expect 400 "$(code "$LINK")" "a second download of the profile"
ENDPOINT=$(field endpoint <"$DIR/$RECIPIENT.share")
TOKEN=$(field bearerToken <"$DIR/$RECIPIENT.share")

# 4. Recipient: the tables shared with it, the table's version, and a query:
#    NDJSON lines of protocol, metaData and one file, with a signed, expiring URL.
as_recipient "$TOKEN" "$ENDPOINT/shares/$SHARE/all-tables"
expect 0 "$(as_recipient "$TOKEN" -D - -o /dev/null "$ENDPOINT/shares/$SHARE/schemas/default/tables/trips/version" |
  header delta-table-version)" "the table's version"
QUERY=$(as_recipient "$TOKEN" -X POST "$ENDPOINT/shares/$SHARE/schemas/default/tables/trips/query" -d '{}')
echo "$QUERY"

# 5. Recipient: the file's URL needs no credentials; it is the Parquet file written in step 1.
anonymous -o "$DIR/downloaded.parquet" "$(echo "$QUERY" | field url)"
cmp "$DIR/downloaded.parquet" "$DIR/trips/part-00000.parquet"
# <<< steps

printf '\nwalk-through finished: share %s, recipient %s, table %s\n' "$SHARE" "$RECIPIENT" "$TABLE"
