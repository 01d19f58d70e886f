#!/usr/bin/env bash
# Runs every Fuzz target in the module for the given number of seconds each.
set -euo pipefail
secs=${1:-5}
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $f (${secs}s)"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "${secs}s" "$pkg" >/tmp/fuzz-$$.log 2>&1 || { cat /tmp/fuzz-$$.log; exit 1; }
  done
done
