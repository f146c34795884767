#!/usr/bin/env bash
# Builds the raftcat image (a static binary in a FROM scratch image) and
# starts the compose cluster, then waits until every node is healthy.
#   scripts/cluster-up.sh             three nodes, http://127.0.0.1:8081..8083
#   scripts/cluster-up.sh --five      five nodes (profile "five"), ports 8081..8085
#   scripts/cluster-up.sh --insecure  without authentication: anyone who reaches a
#                                     port may do anything (a quick look on this host)
# Every node runs with --auth=token and the admin token in
# $RAFTCAT_SECRETS_DIR/admin.token (default ./.cluster-secrets), made on
# first use (mode 0600) and mounted read-only at /secrets/admin.token.
# Keep that file as long as the data volumes: it is the admin's token from
# the cluster's first start on.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/compose.sh"

size=3
profile=()
insecure=
for arg in "$@"; do
  case "$arg" in
    --five) size=5; profile=(--profile five) ;;
    --insecure) insecure=1 ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
export RAFTCAT_CLUSTER_SIZE=$size

# The secrets directory is mounted in either case; with --insecure it
# stays unused.
secrets=${RAFTCAT_SECRETS_DIR:-$root/.cluster-secrets}
mkdir -p "$secrets"
chmod 700 "$secrets"
export RAFTCAT_SECRETS_DIR=$secrets
if [ -n "$insecure" ]; then
  export RAFTCAT_AUTH=none RAFTCAT_ADMIN_TOKEN_FILE=
else
  if [ ! -s "$secrets/admin.token" ]; then
    (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$secrets/admin.token")
    echo "made a new admin token in $secrets/admin.token"
  fi
  export RAFTCAT_AUTH=token RAFTCAT_ADMIN_TOKEN_FILE=/secrets/admin.token
fi

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
if [ -n "$insecure" ]; then
  echo "authentication off (--insecure): anyone who reaches these ports may read, change and delete everything"
else
  token_file=$secrets/admin.token
  [ "$secrets" = "$root/.cluster-secrets" ] && token_file=.cluster-secrets/admin.token
  cat <<EOF
authentication on: every API request needs the admin token (or one made with 'raftcat auth token create')
  export RAFTCAT_TOKEN=\$(cat $token_file)
  curl -H "Authorization: Bearer \$RAFTCAT_TOKEN" http://127.0.0.1:8081/v1/cluster
  ./raftcat members --addr http://127.0.0.1:8081      # the CLI reads RAFTCAT_TOKEN
EOF
fi
