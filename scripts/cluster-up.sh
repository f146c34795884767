#!/usr/bin/env bash
# Builds the raftcat image (a static binary in a FROM scratch image) and
# starts the compose cluster, then waits until every node is healthy.
#   scripts/cluster-up.sh          three nodes, http://127.0.0.1:8081..8083
#   scripts/cluster-up.sh --five   five nodes (profile "five"), ports 8081..8085
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/compose.sh"

size=3
profile=()
if [ "${1:-}" = "--five" ]; then size=5; profile=(--profile five); fi
export RAFTCAT_CLUSTER_SIZE=$size

mkdir -p "$root/.image"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o .image/raftcat ./cmd/raftcat)
compose "${profile[@]}" build
compose "${profile[@]}" up -d

for i in $(seq 1 "$size"); do
  ok=
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:808$i/readyz" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.5
  done
  if [ -z "$ok" ]; then
    echo "node$i did not become ready; its log:" >&2
    compose logs --tail 50 "node$i" >&2
    exit 1
  fi
  echo "node$i ready: http://127.0.0.1:808$i"
done
echo "compose cluster of $size ready"
