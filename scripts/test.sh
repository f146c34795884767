#!/usr/bin/env bash
# Runs raftcat's test suite, first installing from Debian's packages what
# the tests need and this machine lacks (only Go must be there already).
#
#   scripts/test.sh                  the whole suite: go test -race -count=1 -timeout 30m ./...
#   scripts/test.sh ./fsm/           only the packages named
#   scripts/test.sh -run TestX       go test flags; with no package named, ./... is added
#   scripts/test.sh -run TestX ./cluster/
#
# Arguments go to `go test` after -race -count=1 -timeout 30m (a flag given
# again, such as -timeout 5m, overrides those); they replace ./... only when
# they name a package (./dir, ./dir/..., ., or an import path of this module).
#
# What it installs when missing (Debian packages, with apt-get, through sudo
# when not root): curl (the script tests drive the README's shell scripts),
# etcd-server (the bench smoke test compares against etcd), postgresql (the
# bench's PostgreSQL tests start servers from /usr/lib/postgresql/<version>/bin),
# chromium (the status page is tested in a headless browser), prometheus
# (promtool checks the alert rules and metrics) and fuse3 (internal/faultfs
# mounts its test filesystems with fusermount3; they also need /dev/fuse).
# Without apt-get, or when it fails, the script names what is missing and
# stops.
#
# Before the tests it builds and smoke-tests the S3-compatible server the
# storage tests run (versitygw, built once from the Go module proxy into the
# user cache), so no test waits on that build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

case "${1:-}" in
  -h|--help|help) usage; exit 0 ;;
esac

if ! command -v go >/dev/null 2>&1; then
  echo "test.sh: go not found (looked on PATH and in /usr/local/go/bin); install Go first: https://go.dev/dl/" >&2
  exit 1
fi

# tool:package pairs still missing.
missing() {
  command -v curl >/dev/null 2>&1 || echo "curl:curl"
  command -v etcd >/dev/null 2>&1 || echo "etcd:etcd-server"
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || echo "initdb:postgresql"
  command -v chromium >/dev/null 2>&1 || echo "chromium:chromium"
  command -v promtool >/dev/null 2>&1 || echo "promtool:prometheus"
  command -v fusermount3 >/dev/null 2>&1 || echo "fusermount3:fuse3"
}

explain() {
  local pairs=("$@") tools=() pkgs=() p
  for p in "${pairs[@]}"; do tools+=("${p%%:*}"); pkgs+=("${p#*:}"); done
  echo "test.sh: the tests need ${tools[*]}, which this machine lacks." >&2
  echo "test.sh: install them (Debian: apt-get install ${pkgs[*]}) and run this again." >&2
}

mapfile -t need < <(missing)
if [ ${#need[@]} -gt 0 ]; then
  pkgs=()
  for p in "${need[@]}"; do pkgs+=("${p#*:}"); done
  sudo=()
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo=(sudo); fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: apt-get not found." >&2
    explain "${need[@]}"; exit 1
  fi
  if [ "$(id -u)" -ne 0 ] && [ ${#sudo[@]} -eq 0 ]; then
    echo "test.sh: not root and sudo not found, so cannot run apt-get." >&2
    explain "${need[@]}"; exit 1
  fi
  echo "test.sh: installing ${pkgs[*]}"
  if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"; }; then
    echo "test.sh: apt-get failed." >&2
    explain "${need[@]}"; exit 1
  fi
  mapfile -t need < <(missing)
  if [ ${#need[@]} -gt 0 ]; then
    echo "test.sh: still missing after apt-get install." >&2
    explain "${need[@]}"; exit 1
  fi
fi

# The packages to test: ./... unless an argument names one.
module=$(go list -m)
args=("$@")
named=0
for a in "${args[@]}"; do
  case "$a" in
    .|./*|../*|"$module"|"$module"/*) named=1 ;;
  esac
done
[ $named -eq 1 ] || args+=(./...)

go version
go mod download

# The storage tests run a real S3-compatible server: versitygw, which
# internal/s3test builds once from the Go module proxy into the user cache
# and reuses. Build (and smoke-test) it first, so no test waits on it.
go test -count=1 -run TestServerStoresObjects ./internal/s3test/

go test -race -count=1 -timeout 30m "${args[@]}"
