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
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "${secs}s" "$pkg" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
    rm -f "$log"
  done
done
