#!/usr/bin/env bash
# The Lance Namespace walk-through of docs/lance.md, runnable:
#   scripts/walkthrough-lance.sh [BASE_URL]     (default http://127.0.0.1:8080)
# namespace -> declare -> a staged manifest -> version create -> list ->
# batch commit -> delete versions. It creates the schema unity.walk_<run>
# and tables in a new directory under ${TMPDIR:-/tmp}, which the node must
# reach as file:// (run it on the node's host). It exits non-zero as soon
# as an answer is not the expected one. With --auth=token set
# RAFTCAT_TOKEN; against HTTPS with a CA of your own, RAFTCAT_CA_FILE.
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
. "$(dirname "$0")/walkthrough-lib.sh"

# >>> steps: docs/lance.md shows the blocks below; a test keeps the two equal
L=$BASE/lance/v1
NS=walk_$RUN
DIR=$(mktemp -d "${TMPDIR:-/tmp}/raftcat-lance.XXXXXX")   # the tables' files, on the node's host

# 1. A namespace: [unity, walk_…] is a schema of catalog unity ($ joins the parts, %24 in a URL).
api -X POST "$L/namespace/unity%24$NS/create" -d '{}'

# 2. Declare a table at a location of our own: it has no version yet.
api -X POST "$L/table/unity%24$NS%24emb/declare" -d '{"location":"file://'$DIR'/emb.lance"}'

# 3. Write a staged manifest in the table's _versions/ directory, as a Lance writer does
#    after writing its data files. The catalog copies the manifest's bytes as they are.
mkdir -p "$DIR/emb.lance/_versions"
printf 'manifest of version 1\n' >"$DIR/emb.lance/_versions/v1.manifest-$RUN"

# 4. Create version 1 from it. manifest_path is relative to the store's root (no leading
#    slash for file://). The catalog writes the final manifest create-only and records it.
api -X POST "$L/table/unity%24$NS%24emb/version/create" -d '{"version":1,"naming_scheme":"V2",
  "manifest_path":"'${DIR#/}'/emb.lance/_versions/v1.manifest-'$RUN'","manifest_size":22}'
cmp "$DIR/emb.lance/_versions/18446744073709551614.manifest" <(printf 'manifest of version 1\n')
#    Version 1 again from another staged file is a conflict: 409, code 14.
printf 'another manifest\n' >"$DIR/emb.lance/_versions/v1b.manifest-$RUN"
expect 409 "$(code -X POST "$L/table/unity%24$NS%24emb/version/create" -d '{"version":1,"naming_scheme":"V2",
  "manifest_path":"'${DIR#/}'/emb.lance/_versions/v1b.manifest-'$RUN'"}')" "a second version 1"

# 5. The latest version, as a Lance client asks for it.
expect '"version":1' "$(api -X POST "$L/table/unity%24$NS%24emb/version/list?limit=1&descending=true" -d null |
  grep -o '"version":1')" "the latest version"

# 6. One batch, one raft entry: declare a second table and create version 2 of the first.
printf 'manifest of version 2\n' >"$DIR/emb.lance/_versions/v2.manifest-$RUN"
api -X POST "$L/table/batch-commit" -d '{"operations":[
  {"declare_table":{"id":["unity","'$NS'","labels"],"location":"file://'$DIR'/labels.lance"}},
  {"create_table_version":{"id":["unity","'$NS'","emb"],"version":2,"naming_scheme":"V2",
    "manifest_path":"'${DIR#/}'/emb.lance/_versions/v2.manifest-'$RUN'"}}]}'

# 7. Forget version records, leaving the files: version 1 alone (end_version is exclusive),
#    then, in a batch, every version from 2 on (-1: through the latest).
api -X POST "$L/table/unity%24$NS%24emb/version/delete" -d '{"ranges":[{"start_version":1,"end_version":2}]}'
api -X POST "$L/table/batch-commit" -d '{"operations":[
  {"delete_table_versions":{"id":["unity","'$NS'","emb"],"ranges":[{"start_version":2,"end_version":-1}]}}]}'
expect '{"versions":[]}' "$(api -X POST "$L/table/unity%24$NS%24emb/version/list" -d null)" "the versions left"
# <<< steps

printf '\nwalk-through finished: Lance tables unity.%s.emb and unity.%s.labels in %s\n' "$NS" "$NS" "$DIR"
