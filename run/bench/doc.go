// Package bench holds the benchmarks behind the speed and memory figures of
// issue 2, run by `just bench`: ingest → filter → Parquet against the floor
// of decompressing and splitting the same file, curation with token counts
// against the tokenizer alone, and peak RSS of a conversion at 10k and 200k
// conversations, and (BenchmarkScale, issue 9) the wall time and peak RSS of
// every command of a heuristic run at 10k, 100k and 1M conversations.
// TestMemoryFlat, which `go test` runs (not -short), is the last cut down
// for CI: every command at 4k and 10k, failing when a peak RSS grows more
// than 1.5×. It has no code of its own; everything is in its tests, but for
// internal/rsslaunch, the small program every benchmark starts the
// commands it measures from. The synthetic input is generated on first use and cached in
// testdata/generated.
package bench
