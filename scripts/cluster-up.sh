#!/usr/bin/env bash
# Builds the raftcat image (a static binary in a FROM scratch image) and
# starts the compose cluster, then waits until every node is healthy.
#   scripts/cluster-up.sh             three nodes, http://127.0.0.1:8081..8083
#   scripts/cluster-up.sh --five      five nodes (profile "five"), ports 8081..8085
#   scripts/cluster-up.sh --secure    and transport security: HTTPS on every node
#                                     (https://127.0.0.1:8081..), mutual TLS between
#                                     nodes and encrypted gossip
#   scripts/cluster-up.sh --insecure  without authentication: anyone who reaches a
#                                     port may do anything (a quick look on this host)
# Every node runs with --auth=token and the admin token in
# $RAFTCAT_SECRETS_DIR/admin.token (default ./.cluster-secrets), made on
# first use (mode 0600) and mounted read-only at /secrets/admin.token.
# Keep that file as long as the data volumes: it is the admin's token from
# the cluster's first start on. --secure also makes, on first use, a CA in
# $RAFTCAT_CA_DIR (default ./.cluster-ca; its key never enters a container),
# its certificate as ca.pem, a gossip key (gossip.key) and each node's
# certificate (nodeN/node.pem, valid for nodeN, localhost and 127.0.0.1) in
# the secrets directory; node i mounts its own at /tls.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/compose.sh"

size=3
profile=()
insecure=
secure=
for arg in "$@"; do
  case "$arg" in
    --five) size=5; profile=(--profile five) ;;
    --insecure) insecure=1 ;;
    --secure) secure=1 ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
if [ -n "$insecure" ] && [ -n "$secure" ]; then
  echo "cluster-up.sh: --secure and --insecure do not go together" >&2; exit 2
fi
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

for i in 1 2 3 4 5; do mkdir -p "$secrets/node$i"; done # each node mounts its own at /tls

mkdir -p "$root/.image"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o .image/raftcat ./cmd/raftcat)
bin=$root/.image/raftcat

# make_tls makes what is missing of the CA, the node certificates and the
# gossip key; what exists is kept (the nodes already trust it).
make_tls() {
  local ca=${RAFTCAT_CA_DIR:-$root/.cluster-ca}
  if [ ! -s "$ca/ca.pem" ]; then
    "$bin" tls ca create --out "$ca" --name "raftcat compose cluster CA"
  fi
  cp "$ca/ca.pem" "$secrets/ca.pem"
  for i in 1 2 3 4 5; do
    local d=$secrets/node$i
    if [ ! -s "$d/node.pem" ]; then
      local tmp; tmp=$(mktemp -d)
      "$bin" tls cert create --ca "$ca" --name "node$i" --host "node$i,localhost,127.0.0.1,172.31.213.1$i" --out "$tmp" >/dev/null
      mv "$tmp/node$i.pem" "$d/node.pem"; mv "$tmp/node$i-key.pem" "$d/node-key.pem"; rmdir "$tmp"
    fi
  done
  if [ ! -s "$secrets/gossip.key" ]; then
    (umask 077 && "$bin" gossip keygen >"$secrets/gossip.key")
  fi
}

scheme=http
curl_tls=()
if [ -n "$secure" ]; then
  make_tls
  scheme=https
  curl_tls=(--cacert "$secrets/ca.pem")
  export RAFTCAT_TLS_CERT_FILE=/tls/node.pem RAFTCAT_TLS_KEY_FILE=/tls/node-key.pem \
    RAFTCAT_CLUSTER_TLS_CA_FILE=/secrets/ca.pem RAFTCAT_CLUSTER_TLS_CERT_FILE=/tls/node.pem \
    RAFTCAT_CLUSTER_TLS_KEY_FILE=/tls/node-key.pem RAFTCAT_GOSSIP_KEY_FILE=/secrets/gossip.key \
    RAFTCAT_NODE_URL=https://127.0.0.1:8080 RAFTCAT_NODE_CA_FILE=/secrets/ca.pem
else
  export RAFTCAT_TLS_CERT_FILE= RAFTCAT_TLS_KEY_FILE= RAFTCAT_CLUSTER_TLS_CA_FILE= RAFTCAT_CLUSTER_TLS_CERT_FILE= \
    RAFTCAT_CLUSTER_TLS_KEY_FILE= RAFTCAT_GOSSIP_KEY_FILE= RAFTCAT_NODE_URL=http://127.0.0.1:8080 RAFTCAT_NODE_CA_FILE=
fi
compose "${profile[@]}" build
compose "${profile[@]}" up -d

for i in $(seq 1 "$size"); do
  ok=
  for _ in $(seq 1 120); do
    if curl -fsS "${curl_tls[@]}" "$scheme://127.0.0.1:808$i/readyz" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.5
  done
  if [ -z "$ok" ]; then
    echo "node$i did not become ready; its log:" >&2
    compose logs --tail 50 "node$i" >&2
    exit 1
  fi
  echo "node$i ready: $scheme://127.0.0.1:808$i"
done
echo "compose cluster of $size ready"
if [ -n "$insecure" ]; then
  echo "authentication off (--insecure): anyone who reaches these ports may read, change and delete everything"
else
  shown=$secrets
  [ "$secrets" = "$root/.cluster-secrets" ] && shown=.cluster-secrets
  if [ -n "$secure" ]; then
    cat <<EOF
transport security on: HTTPS with the CA in $shown/ca.pem, mutual TLS between nodes, encrypted gossip
authentication on: every API request needs the admin token (or one made with 'raftcat auth token create')
  export RAFTCAT_TOKEN=\$(cat $shown/admin.token) RAFTCAT_CA_FILE=$shown/ca.pem
  curl --cacert $shown/ca.pem -H "Authorization: Bearer \$RAFTCAT_TOKEN" https://127.0.0.1:8081/v1/cluster
  ./raftcat members --addr https://127.0.0.1:8081     # the CLI reads RAFTCAT_TOKEN and RAFTCAT_CA_FILE
EOF
  else
    cat <<EOF
authentication on: every API request needs the admin token (or one made with 'raftcat auth token create')
  export RAFTCAT_TOKEN=\$(cat $shown/admin.token)
  curl -H "Authorization: Bearer \$RAFTCAT_TOKEN" http://127.0.0.1:8081/v1/cluster
  ./raftcat members --addr http://127.0.0.1:8081      # the CLI reads RAFTCAT_TOKEN
EOF
  fi
fi
