#!/usr/bin/env bash
# The commit across formats of docs/lance.md, runnable:
#   scripts/walkthrough-transaction.sh [BASE_URL]     (default http://127.0.0.1:8080)
# It creates a schema unity.walk_<run> holding a Delta table (fact), an
# Iceberg table (dim) and a Lance table (emb, its files in a new directory
# under ${TMPDIR:-/tmp}, which the node must reach as file://: run it on
# the node's host), commits all three in one transaction, then shows that
# a transaction with one failing operation changes none. It exits non-zero
# as soon as an answer is not the expected one. With --auth=token set
# RAFTCAT_TOKEN; against HTTPS with a CA of your own, RAFTCAT_CA_FILE.
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
. "$(dirname "$0")/walkthrough-lib.sh"

# >>> steps: docs/lance.md shows the blocks below; a test keeps the two equal
UC=$BASE/api/2.1/unity-catalog
DELTA=$UC/delta/v1/catalogs/unity/schemas
ICE=$UC/iceberg/v1/unity
S=walk_$RUN
DIR=$(mktemp -d "${TMPDIR:-/tmp}/raftcat-tx.XXXXXX")   # the Lance table's files, on the node's host

# 1. A schema for the three tables.
api -X POST "$UC/schemas" -d '{"name":"'$S'","catalog_name":"unity"}'

# 2. The Delta fact table, catalog-managed: stage it (the server picks its uuid and location), create it.
STAGED=$(api -X POST "$DELTA/$S/staging-tables" -d '{"name":"fact"}')
FACT_ID=$(echo "$STAGED" | field table-id)
api -X POST "$DELTA/$S/tables" -d '{"name":"fact","location":"'$(echo "$STAGED" | field location)'",
  "table-type":"MANAGED","last-commit-timestamp-ms":1700000000000,
  "columns":{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]},
  "protocol":{"min-reader-version":3,"min-writer-version":7,
    "reader-features":["catalogManaged","v2Checkpoint","vacuumProtocolCheck","deletionVectors"],
    "writer-features":["catalogManaged","v2Checkpoint","vacuumProtocolCheck","deletionVectors","inCommitTimestamp"]},
  "properties":{"delta.enableDeletionVectors":"true","delta.checkpointPolicy":"v2",
    "delta.enableInCommitTimestamps":"true","delta.checkpoint.writeStatsAsStruct":"true",
    "delta.checkpoint.writeStatsAsJson":"true","io.unitycatalog.tableId":"'$FACT_ID'"}}'

# 3. The Iceberg dimension table.
DIM_ID=$(api -X POST "$ICE/namespaces/$S/tables" -d '{"name":"dim","schema":{"type":"struct",
  "fields":[{"id":1,"name":"id","type":"long","required":true}]}}' | field table-uuid)

# 4. The Lance embeddings table, and the staged manifest of its version 1.
api -X POST "$BASE/lance/v1/table/unity%24$S%24emb/declare" -d '{"location":"file://'$DIR'/emb.lance"}'
mkdir -p "$DIR/emb.lance/_versions"
printf 'manifest of version 1\n' >"$DIR/emb.lance/_versions/v1.manifest-$RUN"

# 5. One transaction, one raft entry: Delta version 1, an Iceberg commit and Lance version 1.
api -X POST "$UC/transactions/commit" -d '{"operations":[
  {"delta":{"catalog":"unity","schema":"'$S'","name":"fact",
    "requirements":[{"type":"assert-table-uuid","uuid":"'$FACT_ID'"}],
    "updates":[{"action":"add-commit","commit":{"version":1,"timestamp":1700000000100,
      "file-name":"00000000000000000001.'$FACT_ID'.json","file-size":512,"file-modification-timestamp":1700000000100}}]}},
  {"iceberg":{"catalog":"unity","namespace":["'$S'"],"name":"dim",
    "requirements":[{"type":"assert-table-uuid","uuid":"'$DIM_ID'"}],
    "updates":[{"action":"set-properties","updates":{"fact-version":"1"}}]}},
  {"lance":{"create_table_version":{"id":["unity","'$S'","emb"],"version":1,"naming_scheme":"V2",
    "manifest_path":"'${DIR#/}'/emb.lance/_versions/v1.manifest-'$RUN'"}}}]}'

# 6. All or nothing: Delta version 2 with another Lance version 1 fails as a whole
#    (409 ABORTED, naming operation 1): Delta stays at version 1.
printf 'another manifest of version 1\n' >"$DIR/emb.lance/_versions/v1b.manifest-$RUN"
expect 409 "$(code -X POST "$UC/transactions/commit" -d '{"operations":[
  {"delta":{"catalog":"unity","schema":"'$S'","name":"fact",
    "requirements":[{"type":"assert-table-uuid","uuid":"'$FACT_ID'"}],
    "updates":[{"action":"add-commit","commit":{"version":2,"timestamp":1700000000200,
      "file-name":"00000000000000000002.'$FACT_ID'.json","file-size":512,"file-modification-timestamp":1700000000200}}]}},
  {"lance":{"create_table_version":{"id":["unity","'$S'","emb"],"version":1,"naming_scheme":"V2",
    "manifest_path":"'${DIR#/}'/emb.lance/_versions/v1b.manifest-'$RUN'"}}}]}')" "a transaction with a taken Lance version"
expect 1 "$(api "$DELTA/$S/tables/fact" | number latest-table-version)" "fact's latest version"
expect 1 "$(api "$ICE/namespaces/$S/tables/dim" | field fact-version)" "dim's property"
# <<< steps

printf '\nwalk-through finished: unity.%s.fact, dim and emb committed together\n' "$S"
