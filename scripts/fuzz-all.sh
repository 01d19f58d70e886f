#!/usr/bin/env bash
# Runs every Fuzz target in the module for the given number of seconds each.
# FUZZ_SKIP lists package paths (relative, e.g. "io/parquetio") to leave out:
# CI leaves out the columnar readers, whose coverage-instrumented build of
# Arrow takes minutes; their seed corpora (including every crash found so
# far) still run in the ordinary `go test`.
set -euo pipefail
secs=${1:-5}
cd "$(dirname "$0")/.."
mod=$(go list -m)
for pkg in $(go list ./...); do
  rel=${pkg#"$mod"/}
  case " ${FUZZ_SKIP:-} " in *" $rel "*) echo "fuzz $pkg: skipped (FUZZ_SKIP)"; continue ;; esac
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $f (${secs}s)"
    log=$(mktemp)
    if ! go test -run '^$' -fuzz "^${f}\$" -fuzztime "${secs}s" "$pkg" >"$log" 2>&1; then
      # Go's fuzzing engine sometimes reports "context deadline exceeded"
      # when -fuzztime ends while a worker is busy (a loaded machine); that
      # writes no failing input. Try such a run once more; a real crash or
      # hang always writes its input under testdata/fuzz and fails at once.
      if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log"; then
        echo "fuzz $pkg $f: engine deadline with no failing input; running again"
        go test -run '^$' -fuzz "^${f}\$" -fuzztime "${secs}s" "$pkg" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
      else
        cat "$log"; rm -f "$log"; exit 1
      fi
    fi
    rm -f "$log"
  done
done
