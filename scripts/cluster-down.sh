#!/usr/bin/env bash
# Stops and removes the compose cluster's containers. Data volumes are kept
# (a later cluster-up.sh resumes the same cluster) unless --volumes is given.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/compose.sh"
args=(--profile five down --remove-orphans)
if [ "${1:-}" = "--volumes" ]; then args+=(--volumes); fi
compose "${args[@]}"
