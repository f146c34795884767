#!/usr/bin/env bash
# The Iceberg REST catalog walk-through of docs/iceberg.md, runnable:
#   scripts/walkthrough-iceberg.sh [BASE_URL]     (default http://127.0.0.1:8080)
# config -> namespace -> table -> load with ETag / If-None-Match -> commit.
# It creates the namespace walk_<run> in warehouse unity and exits non-zero
# as soon as an answer is not the expected one. With --auth=token set
# RAFTCAT_TOKEN; against HTTPS with a CA of your own, RAFTCAT_CA_FILE.
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
. "$(dirname "$0")/walkthrough-lib.sh"

# >>> steps: docs/iceberg.md shows the blocks below; a test keeps the two equal
ICE=$BASE/api/2.1/unity-catalog/iceberg
NS=walk_$RUN

# 1. The config of warehouse unity: overrides.prefix (unity) goes on every other path.
api "$ICE/v1/config?warehouse=unity"

# 2. A namespace, and a table in it.
api -X POST "$ICE/v1/unity/namespaces" -d '{"namespace":["'$NS'"]}'
api -X POST "$ICE/v1/unity/namespaces/$NS/tables" -d '{"name":"events","schema":{"type":"struct","fields":[
  {"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"city","type":"string","required":false}]}}'

# 3. Load it. Its ETag, sent back as If-None-Match, is a 304 Not Modified.
TABLE=$ICE/v1/unity/namespaces/$NS/tables/events
ETAG=$(api -D - -o /dev/null "$TABLE" | header etag)
UUID=$(api "$TABLE" | field table-uuid)
expect 304 "$(code -H "If-None-Match: $ETAG" "$TABLE")" "a load with the current ETag"

# 4. Commit: set a property, provided the table is still the one loaded.
api -X POST "$TABLE" -d '{"requirements":[{"type":"assert-table-uuid","uuid":"'$UUID'"}],
  "updates":[{"action":"set-properties","updates":{"walkthrough-step":"4"}}]}'

# 5. The commit wrote new metadata: the old ETag no longer matches (200, a new ETag),
#    and the property is there.
expect 200 "$(code -H "If-None-Match: $ETAG" "$TABLE")" "a load with the old ETag"
expect 4 "$(api "$TABLE" | field walkthrough-step)" "the committed property"

# 6. A commit whose requirement fails changes nothing: 409 CommitFailedException.
expect 409 "$(code -X POST "$TABLE" -d '{"requirements":[{"type":"assert-table-uuid",
  "uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[]}')" "a commit on the wrong uuid"
# <<< steps

printf '\nwalk-through finished: Iceberg table unity.%s.events\n' "$NS"
