#!/usr/bin/env bash
# Runs a raftcat cluster of local processes on this host.
#
#   scripts/local-cluster.sh start [N] [--token T] [--secure|--insecure]
#                                        build raftcat (go build, reusing Go's build cache),
#                                        start N nodes (default 3), wait until ready
#   scripts/local-cluster.sh stop        stop the nodes (SIGTERM, then SIGKILL after 15 s)
#   scripts/local-cluster.sh status      show each node's pid and /v1/cluster view
#   scripts/local-cluster.sh clean       stop and delete the cluster's data
#
# Node i (1-based) listens on HTTP 127.0.0.1:$((HTTP_BASE+i)), raft $((RAFT_BASE+i)),
# gossip $((GOSSIP_BASE+i)). Defaults: 8080, 8310, 8320 (so node1 is
# http://127.0.0.1:8081). Override with RAFTCAT_HTTP_BASE, RAFTCAT_RAFT_BASE,
# RAFTCAT_GOSSIP_BASE; the state lives in RAFTCAT_CLUSTER_DIR (default ./.cluster).
# RAFTCAT_STORAGE_ROOT sets the managed storage root of a new cluster
# (default file://$RAFTCAT_CLUSTER_DIR/warehouse); the other RAFTCAT_*
# variables reach every node. RAFTCAT_BIN names a raftcat binary to run
# instead of building one into $RAFTCAT_CLUSTER_DIR/bin.
#
# Every node runs with --auth=token and the admin token in
# $RAFTCAT_CLUSTER_DIR/admin.token (mode 0600). A cluster without that file
# gets --token, else RAFTCAT_TOKEN, else a random token; once written, the
# file stays the admin's token. --insecure starts the nodes without authentication.
# --secure adds transport security: a CA, node certificates (for 127.0.0.1)
# and a gossip key made in $RAFTCAT_CLUSTER_DIR/tls on first use; nodes serve
# HTTPS, talk to each other over mutual TLS and encrypt gossip. Once made,
# they are used at every start: the cluster stays secure.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${RAFTCAT_CLUSTER_DIR:-$here/.cluster}
http_base=${RAFTCAT_HTTP_BASE:-8080}
raft_base=${RAFTCAT_RAFT_BASE:-8310}
gossip_base=${RAFTCAT_GOSSIP_BASE:-8320}
bin=${RAFTCAT_BIN:-$dir/bin/raftcat}
token_file=$dir/admin.token

tls_dir=$dir/tls

# scheme is how the nodes serve: https once the cluster has certificates.
scheme() { if [ -s "$tls_dir/ca.pem" ]; then echo https; else echo http; fi; }

# make_tls makes what is missing of the CA, the node certificates and the
# gossip key.
make_tls() {
  local n=$1
  [ -s "$tls_dir/ca.pem" ] || "$bin" tls ca create --out "$tls_dir" --name "raftcat local cluster CA" >/dev/null
  for i in $(seq 1 "$n"); do
    [ -s "$tls_dir/node$i.pem" ] ||
      "$bin" tls cert create --ca "$tls_dir" --name "node$i" --host 127.0.0.1,localhost --out "$tls_dir" >/dev/null
  done
  [ -s "$tls_dir/gossip.key" ] || (umask 077 && "$bin" gossip keygen >"$tls_dir/gossip.key")
}

# tls_flags are node $1's transport security flags (none without certificates).
tls_flags() {
  [ -s "$tls_dir/ca.pem" ] || return 0
  local c=$tls_dir/node$1.pem k=$tls_dir/node$1-key.pem
  echo --tls-cert-file "$c" --tls-key-file "$k" --cluster-tls-ca-file "$tls_dir/ca.pem" \
    --cluster-tls-cert-file "$c" --cluster-tls-key-file "$k" --gossip-key-file "$tls_dir/gossip.key"
}

nodes() { for d in "$dir"/node*/; do [ -d "$d" ] && basename "$d" | sed 's/^node//'; done | sort -n; }

alive() { [ -f "$dir/node$1.pid" ] && kill -0 "$(cat "$dir/node$1.pid")" 2>/dev/null; }

# admin_token makes sure the admin token file exists, holding $1 (the
# token given), RAFTCAT_TOKEN or a random token. An existing file is kept:
# the cluster's admin got its token at the first start.
admin_token() {
  if [ -s "$token_file" ]; then
    if [ -n "$1" ] && [ "$1" != "$(cat "$token_file")" ]; then
      echo "note: the admin token stays the one in $token_file (--token sets it for a new cluster only)" >&2
    fi
    return
  fi
  local token=${1:-${RAFTCAT_TOKEN:-}}
  [ -n "$token" ] || token=$(head -c 32 /dev/urandom | base64 | tr -d '/+=\n')
  (umask 077 && printf '%s\n' "$token" >"$token_file")
}

# bearer is the Authorization header requests send: RAFTCAT_TOKEN, else
# the admin token (a header without value when there is neither).
bearer() {
  local token=${RAFTCAT_TOKEN:-}
  if [ -z "$token" ] && [ -s "$token_file" ]; then token=$(cat "$token_file"); fi
  printf 'Authorization: %s' "${token:+Bearer $token}"
}

# build builds raftcat into $bin, unless RAFTCAT_BIN names a binary. Go's
# build cache makes this quick once the first build is done, and a binary
# whose sources did not change is left as it is (no relink). It builds with
# the same settings as a plain `go build`, so the cache of that build
# serves this one too.
build() {
  if [ -n "${RAFTCAT_BIN:-}" ]; then
    echo "using the raftcat binary $bin (RAFTCAT_BIN), without building"
    return
  fi
  mkdir -p "$dir/bin"
  echo "building raftcat (go build -o $bin ./cmd/raftcat; a first build takes a few minutes, later ones seconds)..."
  local t0=$SECONDS
  (cd "$here" && go build -o "$bin" ./cmd/raftcat)
  echo "built raftcat in $((SECONDS - t0)) s"
}

start() {
  local n=3 token= insecure= secure=
  while [ $# -gt 0 ]; do
    case "$1" in
      --token) token=${2:?--token needs a value}; shift ;;
      --insecure) insecure=1 ;;
      --secure) secure=1 ;;
      *) n=$1 ;;
    esac
    shift
  done
  if [ -n "$secure" ] && [ -n "$insecure" ]; then
    echo "local-cluster.sh: --secure and --insecure do not go together" >&2; exit 2
  fi
  build
  [ -z "$secure" ] || make_tls "$n"
  local auth=(--auth=none)
  if [ -z "$insecure" ]; then
    admin_token "$token"
    auth=(--auth=token --admin-token-file "$token_file")
  fi
  local join=
  for i in $(seq 1 "$n"); do join="${join:+$join,}127.0.0.1:$((gossip_base + i))"; done
  for i in $(seq 1 "$n"); do
    if alive "$i"; then echo "node$i already running (pid $(cat "$dir/node$i.pid"))"; continue; fi
    mkdir -p "$dir/node$i"
    "$bin" serve \
      --node-id "node$i" \
      --data-dir "$dir/node$i" \
      --http-addr "127.0.0.1:$((http_base + i))" \
      --raft-addr "127.0.0.1:$((raft_base + i))" \
      --gossip-addr "127.0.0.1:$((gossip_base + i))" \
      --join "$join" \
      --bootstrap-expect "$n" \
      --storage-root "${RAFTCAT_STORAGE_ROOT:-file://$dir/warehouse}" \
      "${auth[@]}" $(tls_flags "$i") \
      >>"$dir/node$i.log" 2>&1 &
    echo $! >"$dir/node$i.pid"
    echo "node$i: pid $!, $(scheme)://127.0.0.1:$((http_base + i)), log $dir/node$i.log"
  done
  for i in $(seq 1 "$n"); do
    local ok=
    for _ in $(seq 1 300); do
      if "$bin" healthcheck --addr "$(scheme)://127.0.0.1:$((http_base + i))" $(ca_flag) >/dev/null 2>&1; then ok=1; break; fi
      alive "$i" || break
      sleep 0.1
    done
    if [ -z "$ok" ]; then echo "node$i did not become ready; see $dir/node$i.log" >&2; exit 1; fi
  done
  echo "cluster of $n ready"
  if [ -n "$insecure" ]; then
    echo "authentication off (--insecure): anyone who reaches these ports may do anything"
    return
  fi
  [ "$(scheme)" = http ] || echo "transport security on: HTTPS with the CA in $tls_dir/ca.pem, mutual TLS between nodes, encrypted gossip"
  echo "authentication on: every API request needs the admin token (or one made with 'raftcat auth token create')"
  echo "  export RAFTCAT_TOKEN=\$(cat $token_file)"
  echo "  curl $(ca_flag --cacert)-H \"Authorization: Bearer \$RAFTCAT_TOKEN\" $(scheme)://127.0.0.1:$((http_base + 1))/v1/cluster"
}

# ca_flag is the flag ($1, default --ca-file) naming the cluster's CA, if it has one.
ca_flag() { [ -s "$tls_dir/ca.pem" ] && echo "${1:---ca-file} $tls_dir/ca.pem "; true; }

stop() {
  for i in $(nodes); do
    if alive "$i"; then
      local pid; pid=$(cat "$dir/node$i.pid")
      kill -TERM "$pid"
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
      echo "node$i stopped"
    fi
    rm -f "$dir/node$i.pid"
  done
}

status() {
  for i in $(nodes); do
    if alive "$i"; then
      echo "node$i: running (pid $(cat "$dir/node$i.pid"))"
      curl -fsS $(ca_flag --cacert) -H "$(bearer)" "$(scheme)://127.0.0.1:$((http_base + i))/v1/cluster" 2>/dev/null || echo "  (not answering)"
      echo
    else
      echo "node$i: stopped"
    fi
  done
}

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p;}' "$0"; }

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  clean) stop; rm -rf "$dir" ;;
  -h | --help | help) usage ;;
  *) usage; exit 2 ;;
esac
