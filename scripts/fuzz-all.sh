#!/usr/bin/env bash
# Runs every Fuzz target in the module for the given number of seconds each.
# FUZZ_SKIP lists package paths (relative, e.g. "io/parquetio") to leave out.
#
# FUZZ_NARROW lists packages whose test binary is coverage-instrumented for
# this module's packages only, not for every dependency as `go test -fuzz`
# does: instrumenting Arrow for the columnar readers took about 9 minutes
# here from a cold cache (4 min of CPU on 2 loaded cores), the narrowed
# builds 2 minutes (40 s of CPU), and seconds when only our code changed. The
# fuzzer is then guided by coverage of our code (the readers' checks and
# decoders, which is what the row-count oracle tests) and still runs Arrow
# on every input. It defaults to "all", every package narrowed (each -fuzz
# build instrumented every dependency again: most of CI's fuzz time);
# FUZZ_NARROW="" instruments dependencies too, for a long run by hand, and a
# list of packages narrows only those.
#
# Minimizing a new input that widens coverage may take -test.fuzzminimizetime
# (60 s by default) during which the engine reports no progress; it is capped
# at the time each target gets, so a short pass stays short.
#
# The test binaries are built with -trimpath, as .ci/run builds ac3, so
# the dependencies compiled for that build (Arrow, SQLite's C) serve these
# too instead of being compiled a second time from a cold cache.
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
narrow=${FUZZ_NARROW-all}
for pkg in $(go list ./...); do
  rel=${pkg#"$mod"/}
  case " ${FUZZ_SKIP:-} " in *" $rel "*) echo "fuzz $pkg: skipped (FUZZ_SKIP)"; continue ;; esac
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  [ -n "$targets" ] || continue
  bin="$bins/$(echo "$rel" | tr / _).test"
  first=$(echo "$targets" | head -1)
  case " $narrow " in
  *" all "*|*" $rel "*)
    # -d=libfuzzer is the instrumentation -fuzz adds, here for our
    # packages only (see FUZZ_NARROW above).
    go test -c -trimpath -gcflags="$mod/...=-d=libfuzzer" -o "$bin" "$pkg" ;;
  *)
    # -fuzz makes go test instrument the build for coverage-guided fuzzing.
    go test -c -trimpath -fuzz "^${first}\$" -o "$bin" "$pkg" ;;
  esac
  for f in $targets; do
    echo "fuzz $pkg $f (${secs}s)"
    log=$(mktemp)
    run() { (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${f}\$" -test.fuzztime "${secs}s" -test.fuzzminimizetime "${secs}s" -test.fuzzcachedir "$cache/$pkg/$f" >"$log" 2>&1); }
    # Go's fuzzing engine sometimes reports "context deadline exceeded"
    # when -fuzztime ends while a worker is busy (minimizing a new input on
    # a loaded machine); that writes no failing input and says nothing of
    # our code. Such a run is tried again up to twice, and if the engine
    # still only ran out of time, the target is reported and passed over. A
    # real crash or hang always writes its input under testdata/fuzz and
    # fails at once.
    tries=0
    until run; do
      if grep -q 'Failing input written to' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
        cat "$log"; rm -f "$log"; exit 1
      fi
      tries=$((tries + 1))
      if [ "$tries" -ge 3 ]; then
        echo "fuzz $pkg $f: the engine ran out of time $tries times without a failing input; passed over"
        break
      fi
      echo "fuzz $pkg $f: engine deadline with no failing input; running again"
    done
    rm -f "$log"
  done
done
