#!/usr/bin/env bash
# Runs every Fuzz target in the module for the given number of seconds each.
# FUZZ_SKIP lists package paths (relative, e.g. "io/parquetio") to leave out:
# CI leaves out the columnar readers, whose coverage-instrumented build of
# Arrow takes minutes; their seed corpora (including every crash found so
# far) still run in the ordinary `go test`.
#
# Each package's instrumented test binary is built once and runs each of its
# targets in turn (linking a binary per target was most of the time this
# took). A failing input is written under the package's testdata/fuzz, as
# `go test -fuzz` would.
set -euo pipefail
secs=${1:-5}
cd "$(dirname "$0")/.."
mod=$(go list -m)
bins=$(mktemp -d)
trap 'rm -rf "$bins"' EXIT
cache="$(go env GOCACHE)/fuzz"
for pkg in $(go list ./...); do
  rel=${pkg#"$mod"/}
  case " ${FUZZ_SKIP:-} " in *" $rel "*) echo "fuzz $pkg: skipped (FUZZ_SKIP)"; continue ;; esac
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  [ -n "$targets" ] || continue
  bin="$bins/$(echo "$rel" | tr / _).test"
  first=$(echo "$targets" | head -1)
  # -fuzz makes go test instrument the build for coverage-guided fuzzing.
  go test -c -fuzz "^${first}\$" -o "$bin" "$pkg"
  for f in $targets; do
    echo "fuzz $pkg $f (${secs}s)"
    log=$(mktemp)
    run() { (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${f}\$" -test.fuzztime "${secs}s" -test.fuzzcachedir "$cache/$pkg/$f" >"$log" 2>&1); }
    if ! run; then
      # Go's fuzzing engine sometimes reports "context deadline exceeded"
      # when -fuzztime ends while a worker is busy (a loaded machine); that
      # writes no failing input. Try such a run once more; a real crash or
      # hang always writes its input under testdata/fuzz and fails at once.
      if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log"; then
        echo "fuzz $pkg $f: engine deadline with no failing input; running again"
        run || { cat "$log"; rm -f "$log"; exit 1; }
      else
        cat "$log"; rm -f "$log"; exit 1
      fi
    fi
    rm -f "$log"
  done
done
