#!/usr/bin/env bash
# The README's curl walk-through of the Delta API commit path, runnable:
#   scripts/walkthrough.sh [BASE_URL]        (default http://127.0.0.1:8080)
# config -> stage -> create -> commit v1 -> backfill -> load. It creates a
# table named walkthrough_<random> in unity.default and exits non-zero if
# any step does not answer as expected. Against a cluster run with
# --auth=token, set RAFTCAT_TOKEN: every request then carries it. Against
# a node serving HTTPS with a CA of its own, set RAFTCAT_CA_FILE (curl's
# --cacert).
set -euo pipefail
base=${1:-http://127.0.0.1:8080}
api=$base/api/2.1/unity-catalog/delta/v1
name=walkthrough_$RANDOM$RANDOM

step() { printf '\n== %s\n' "$*"; }
# curl sends RAFTCAT_TOKEN, when set, as a bearer token, and trusts
# RAFTCAT_CA_FILE, when set.
curl() {
  if [ -n "${RAFTCAT_CA_FILE:-}" ]; then
    set -- --cacert "$RAFTCAT_CA_FILE" "$@"
  fi
  if [ -n "${RAFTCAT_TOKEN:-}" ]; then
    command curl -H "Authorization: Bearer $RAFTCAT_TOKEN" "$@"
  else
    command curl "$@"
  fi
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

step "1. config: which endpoints and protocol version the server speaks"
curl -fsS "$api/config?catalog=unity&protocol-versions=1.0"; echo

step "2. stage a managed table: the server picks its uuid and location"
staging=$(curl -fsS -X POST "$api/catalogs/unity/schemas/default/staging-tables" \
  -H 'Content-Type: application/json' -d "{\"name\":\"$name\"}")
echo "$staging"
id=$(echo "$staging" | field table-id)
location=$(echo "$staging" | field location)

step "3. create it (version 0) with the managed-table contract"
curl -fsS -X POST "$api/catalogs/unity/schemas/default/tables" -H 'Content-Type: application/json' -d @- <<JSON; echo
{"name":"$name","location":"$location","table-type":"MANAGED","last-commit-timestamp-ms":1700000000000,
 "columns":{"type":"struct","fields":[
   {"name":"id","type":"long","nullable":false,"metadata":{}},
   {"name":"amount","type":"decimal(10,2)","nullable":true,"metadata":{}}]},
 "protocol":{"min-reader-version":3,"min-writer-version":7,
   "reader-features":["catalogManaged","v2Checkpoint","vacuumProtocolCheck","deletionVectors"],
   "writer-features":["catalogManaged","v2Checkpoint","vacuumProtocolCheck","deletionVectors","inCommitTimestamp"]},
 "properties":{"delta.enableDeletionVectors":"true","delta.checkpointPolicy":"v2",
   "delta.enableInCommitTimestamps":"true","delta.checkpoint.writeStatsAsStruct":"true",
   "delta.checkpoint.writeStatsAsJson":"true","io.unitycatalog.tableId":"$id"}}
JSON

step "4. commit version 1 (the table must still be $id)"
commit='{"requirements":[{"type":"assert-table-uuid","uuid":"'$id'"}],
 "updates":[{"action":"add-commit","commit":{"version":1,"timestamp":1700000000100,
   "file-name":"00000000000000000001.'$id'.json","file-size":512,"file-modification-timestamp":1700000000100}}]}'
curl -fsS -i -X POST "$api/catalogs/unity/schemas/default/tables/$name" -H 'Content-Type: application/json' -d "$commit" \
  | sed -n '/^X-Raftcat/p;/^{/p'

step "5. the same commit again is an idempotent replay (200, nothing changes)"
curl -fsS -o /dev/null -w '%{http_code}\n' -X POST "$api/catalogs/unity/schemas/default/tables/$name" \
  -H 'Content-Type: application/json' -d "$commit"

step "6. version 1 with another file is a conflict (409)"
answer=$(curl -sS -w '\n%{http_code}' -X POST "$api/catalogs/unity/schemas/default/tables/$name" \
  -H 'Content-Type: application/json' -d "${commit//.json/.other.json}")
echo "$answer"
[ "$(echo "$answer" | tail -n1)" = 409 ] || { echo "expected 409" >&2; exit 1; }

step "7. report version 1 as published (backfilled)"
curl -fsS -o /dev/null -w '%{http_code}\n' -X POST "$api/catalogs/unity/schemas/default/tables/$name" \
  -H 'Content-Type: application/json' \
  -d '{"requirements":[{"type":"assert-table-uuid","uuid":"'$id'"}],"updates":[{"action":"set-latest-backfilled-version","latest-published-version":1}]}'

step "8. load: latest-table-version 1, no unbackfilled commits"
loaded=$(curl -fsS "$api/catalogs/unity/schemas/default/tables/$name")
echo "$loaded"
echo "$loaded" | grep -q '"latest-table-version":1' || { echo "expected latest-table-version 1" >&2; exit 1; }
echo "$loaded" | grep -q '"commits":\[\]' || { echo "expected no unbackfilled commits" >&2; exit 1; }
printf '\nwalk-through finished: table unity.default.%s at version 1\n' "$name"
