# ac3 — conveniences. The README's two commands work without just.

default:
    @just --list

# Build the ac3 binary into bin/ (paths trimmed, symbols stripped; `go
# version -m bin/ac3` still lists every module version). CI (.ci/run) fails
# above 50,000,000 bytes.
build:
    go build -trimpath -ldflags "-s -w" -o bin/ac3 ./cmd/ac3

# The demo: ingest the bundled WildChat and LiC samples, curate, export.
run: build
    ./bin/ac3 run --config fixtures/configs/wildchat.yaml
    ./bin/ac3 status --db runs/demo.db

# The whole test suite, with the race detector. The tests that start real
# ac3 processes run a plain build of the same checkout (AC3_TEST_BIN), as CI
# does: under -race they were most of the suite's time.
test:
    go vet ./...
    go build -o bin/ac3-test ./cmd/ac3
    AC3_TEST_BIN=$PWD/bin/ac3-test go test -race -timeout 30m -count=1 ./...

# Each fuzz target for a few seconds (CI runs them briefly).
fuzz seconds="5":
    ./scripts/fuzz-all.sh {{seconds}}

# Benchmarks that print the figures the issues ask for: ingest/convert
# throughput against the decompress floor, curation against the tokenizer,
# peak RSS at 10k and 200k conversations, then the model client's throughput
# at 600 RPM / 16 concurrent (clean and under a 20% 429 storm, ~8 minutes),
# and the dry run's forecast per conversation. Then the model stages as the
# engine runs them (issue 15: classify, gated-reset, respond and judge at
# 0.2/1/3 s latency, calls/s as a share of the endpoint's limits, ~15
# minutes), the planner and limiter at 1k against 100k conversations (issue
# 9: calls/s ratio, target >= 0.9), and last every command of a heuristic run
# at 10k, 100k and 1M conversations with its wall time and peak RSS (issue 9;
# the 1M step is about two hours on 2 cores: a governed run and a
# --memory-limit off run made side by side, each on its own run file, about
# an hour of commands each; below 1M the two alternate in pairs on one run,
# AC3_BENCH_SIDE_BY_SIDE moves the line; its figures are in the README's
# Memory section and its disk needs in BenchmarkScale's doc;
# `just bench-scale 10000,100000` for less). The e2e config
# fault-free vs under 30% 429 + 10% 500 runs before the scale table (~2
# minutes; target: at most 3x, no failed unit), then the LLM-free run over
# 200k conversations as one process against 4 shards and their merge (issue
# 11; `just bench-shard 20000` for a quick one).
bench:
    go test -run '^$' -bench 'Ingest|Curate|RSS' -benchtime 1x -timeout 60m ./run/bench/
    go test -run '^$' -bench Estimate -benchtime 1x ./run/
    go test -run '^$' -bench Throughput -benchtime 1x -timeout 30m ./pipeline/llm/
    go test -run '^$' -bench '^BenchmarkModelStages$' -benchtime 1x -timeout 60m ./run/bench/modelstages/
    go test -run '^$' -bench '^BenchmarkPlannerAtScale$' -benchtime 1x -timeout 60m ./run/bench/modelstages/
    go test -run '^$' -bench '^BenchmarkPromptCache$' -benchtime 1x ./run/bench/modelstages/
    go test -run '^$' -bench Faults -benchtime 1x -timeout 30m ./cmd/ac3/
    go test -run '^$' -bench '^BenchmarkShardedRun$' -benchtime 1x -timeout 360m ./run/bench/
    AC3_BENCH_SCALE=10000,100000,1000000 go test -run '^$' -bench '^BenchmarkScale$' -benchtime 1x -timeout 1440m ./run/bench/

# Every command of a heuristic run (ingest, annotate, curate with six
# strategies, the same curate again as the resume scan, status, inspect, dry
# run, report, exports) at each size, in its
# own process: wall time and peak RSS, and RSS growth from the smallest size
# to the largest (issue 9 targets: <= 1.1x, none above 1 GiB). Every command
# also runs with --memory-limit off (alternating with the governed runs below
# 1M, side by side on a run of its own from 1M on), and a
# second table prints both columns (wall, CPU, the collector's CPU from the
# runtime's GC trace, system time, peak RSS); a command whose governor costs
# more than 5% of its time fails (issue 28): the extra collector and system
# time of the governed run over the off run's CPU time, which a neighbour's
# load barely moves, unlike the wall ratio, also printed. The same comparison of `ac3 convert` against DuckDB's
# COPY to Parquet (target <= 0.40x DuckDB's wall time):
# AC3_DUCKDB_DIR=DIR go test -run '^$' -bench ConvertDuckDB -benchtime 1x ./run/bench/
# (DIR from scripts/duckdb/install.sh DIR).
# AC3_BENCH_KEEP=DIR keeps each size's run file and exports in DIR;
# AC3_BENCH_BIN=PATH runs a prebuilt ac3 instead of building one.
bench-scale sizes="10000,100000,1000000":
    AC3_BENCH_SCALE={{sizes}} go test -run '^$' -bench '^BenchmarkScale$' -benchtime 1x -timeout 1440m ./run/bench/

# The LLM-free run (ingest, heuristic annotators, six strategies, report,
# exports) over N conversations as one `ac3 run` against 4 `ac3 run --shard
# I/4` at once, `ac3 merge` and the report and exports of the merged run:
# wall times, the merge's time and peak RSS; the merged exports must equal
# the single run's byte for byte (issue 11).
bench-shard conversations="200000":
    AC3_BENCH_SHARD={{conversations}} go test -run '^$' -bench '^BenchmarkShardedRun$' -benchtime 1x -timeout 360m ./run/bench/

# Ingest with --dedupe near of the seeded WildChat-like stream, one record in
# ten a near copy of an earlier one, at each size in its own process:
# conversations/s, peak RSS (flat: the index is in the run file), the run
# file's size, and recall and precision against the injected copies; exact
# dedupe at the smallest size is the baseline (issue 27; the 1M step takes
# about half an hour on 2 cores; `just bench-near 20000` for a quick one).
bench-near sizes="100000,1000000":
    AC3_BENCH_NEAR={{sizes}} go test -run '^$' -bench '^BenchmarkNearDedupe$' -benchtime 1x -timeout 300m ./run/bench/

# The chaos test in full: the e2e config over 300+ conversations against an
# endpoint injecting every fault, with 20 SIGKILLs and resumes (the normal
# test suite runs a short form with 5); then the run's write-ahead log
# removed mid-run, SIGTERM at seeded moments, the endpoint gone mid-run, a
# damaged Parquet input, and 150 damaged copies of a finished run file. Each
# resumes and compares every export and report (spend masked) with a run
# that met nothing.
chaos:
    AC3_CHAOS=1 go test -count=1 -run 'TestChaos|TestDamagedRunFileNeverExportsWrongData' -timeout 90m -v ./cmd/ac3/

# Render the demo report in headless Chromium and save a screenshot.
report-check: run
    ./scripts/report-screenshot.sh runs/demo/report.html runs/demo/report.png

lint:
    test -z "$(gofmt -l .)" || (gofmt -l . && exit 1)
    go vet ./...
