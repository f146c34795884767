#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time each (default
# 10s; FUZZTIME=1m scripts/fuzz.sh for longer). Seed corpora live in each
# package's testdata/fuzz/<Target>/ and in the targets' f.Add calls; a
# failing input is written there by go test and becomes a regular test.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-10s}"
total=0
while IFS=: read -r file target; do
  pkg="./$(dirname "$file")"
  echo "== $pkg $target ($fuzztime)"
  # go test's fuzzer can end a run that found nothing with "context
  # deadline exceeded" when the time runs out mid-exchange with a worker;
  # such a run wrote no failing input and is run once more. A real failure
  # writes its input under testdata/fuzz and fails.
  if ! out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
    if ! grep -q 'context deadline exceeded' <<<"$out" || grep -q 'Failing input written' <<<"$out"; then
      echo "$out"; exit 1
    fi
    echo "   (the fuzzer timed out talking to a worker; once more)"
    out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1) || { echo "$out"; exit 1; }
  fi
  execs=$(echo "$out" | sed -n 's/.*execs: \([0-9]*\).*/\1/p' | tail -1)
  echo "   ${execs:-0} executions"
  total=$((total + ${execs:-0}))
done < <(git grep -n -o -E '^func (Fuzz[A-Za-z0-9_]+)' -- '*_test.go' | sed -E 's/:[0-9]+:func /:/')
echo "fuzzing: $total executions in total"
