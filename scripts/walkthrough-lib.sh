# Helpers the walk-through scripts (scripts/walkthrough-*.sh) share. To run
# a page's steps by hand, set BASE and source this file first:
#
#   BASE=http://127.0.0.1:8080        # or https://…, with RAFTCAT_CA_FILE for a CA of your own
#   . scripts/walkthrough-lib.sh
#
#   api ARGS…                 curl ARGS… as the catalog's caller: sends RAFTCAT_TOKEN (when set) as a
#                             bearer token, trusts RAFTCAT_CA_FILE (when set), sends JSON; prints the
#                             answer, and fails, printing the answer to stderr, on an HTTP error (4xx, 5xx)
#   as_recipient TOKEN ARGS…  the same with another bearer token (a Delta Sharing recipient's)
#   anonymous ARGS…           the same with no token (activation links, signed file URLs)
#   code ARGS…                curl ARGS… as the caller, printing only the status code (the body of an
#                             error goes to stderr); for steps whose answer is meant to be an error
#   field NAME                a string field NAME of a JSON answer on stdin (each line's last)
#   number NAME               the same for a number
#   header NAME               the value of header NAME of an answer (curl -D -) on stdin
#   expect WANT GOT WHAT      fails, naming WHAT, unless GOT is WANT
#   RUN                       a suffix unique to this run: the names a walk-through creates carry it,
#                             so it can run again against the same catalog

BASE=${BASE:-http://127.0.0.1:8080}
BASE=${BASE%/}
RUN=${RUN:-$(date +%s)$RANDOM}

# _curl TOKEN ARGS…: curl with the CA and the token (when not empty).
_curl() {
  local token=$1 opts=(-sS -H 'Content-Type: application/json')
  shift
  [ -z "${RAFTCAT_CA_FILE:-}" ] || opts+=(--cacert "$RAFTCAT_CA_FILE")
  [ -z "$token" ] || opts+=(-H "Authorization: Bearer $token")
  command curl "${opts[@]}" "$@"
}

# _urls ARGS…: the URLs among ARGS, for messages.
_urls() { local a; for a in "$@"; do case $a in http://* | https://*) printf '%s ' "$a" ;; esac; done; }

# _checked TOKEN ARGS…: _curl that prints the answer, or fails loudly on an
# error status or a failed transfer.
_checked() {
  local out status
  echo "> $(_urls "$@")" >&2
  if ! out=$(_curl "$@" -w '\n%{http_code}'); then
    printf '%s\n' "$out" >&2
    echo "walk-through: curl failed: $(_urls "$@")" >&2
    return 1
  fi
  status=${out##*$'\n'} out=${out%$'\n'*}
  if [ "$status" -ge 400 ] || [ "$status" -lt 100 ]; then
    printf '%s\n' "$out" >&2
    echo "walk-through: HTTP $status from $(_urls "$@")" >&2
    return 1
  fi
  [ -z "$out" ] || printf '%s\n' "$out"
}

api() { _checked "${RAFTCAT_TOKEN:-}" "$@"; }
as_recipient() { _checked "$@"; }
anonymous() { _checked "" "$@"; }

code() {
  local body status
  body=$(mktemp)
  status=$(_curl "${RAFTCAT_TOKEN:-}" -o "$body" -w '%{http_code}' "$@") || { rm -f "$body"; return 1; }
  [ "$status" -lt 400 ] || { cat "$body" >&2; echo >&2; }
  rm -f "$body"
  echo "$status"
}

field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
number() { sed -n "s/.*\"$1\":\(-\{0,1\}[0-9][0-9]*\).*/\1/p"; }
header() { tr -d '\r' | grep -i "^$1:" | sed 's/^[^:]*: *//'; }

expect() {
  [ "$1" = "$2" ] && return 0
  echo "walk-through: expected $1 from $3, got ${2:-nothing}" >&2
  return 1
}
