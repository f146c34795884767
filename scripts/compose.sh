# Sourced by the cluster scripts: picks the compose command of this host.
if docker compose version >/dev/null 2>&1; then
  compose() { docker compose -f "$root/docker-compose.cluster.yml" -p raftcat "$@"; }
elif command -v docker-compose >/dev/null 2>&1; then
  compose() { docker-compose -f "$root/docker-compose.cluster.yml" -p raftcat "$@"; }
else
  echo "neither 'docker compose' nor 'docker-compose' is installed" >&2
  exit 1
fi
