package main

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/memgov"
)

// By default each command's soft limit is governed (pipeline/memgov): for
// its first seconds the heap may grow up to a ceiling, then the limit is
// held a quarter above the footprint the command reached, and raised a step
// at a time only when the collector's share of the CPU climbs. Without it a
// long command's peak crept up with the run's length, because the collector
// lets the heap grow to twice what was live at its last cycle and, over
// thousands of cycles, one lands at the worst moment. A soft limit never
// fails: above it the runtime only collects more often, and that is the
// cost: a limit at or under what a command reaches by itself makes the
// collector run early every cycle and the runtime return pages it then
// takes back (issue 28), hence the quarter's margin.
//
// The ceilings are the per-command working sets measured at ten thousand
// conversations. A ceiling well below what a command reaches by itself
// costs it speed for as long as it runs (convert under the writers' ceiling:
// 1.7x the CPU time), so `just bench-scale` measures every command against
// --memory-limit off.
// readerMemoryLimit is that of the commands that read a run in pages
// (export, report, status, inspect, the dry run): one page of conversations
// and one Parquet row group; the conversation and curated exports reach
// about 150 MiB.
const readerMemoryLimit = 160 << 20

// writerMemoryLimit is every other command's: a page of conversations, a
// commit batch bounded by count and bytes, the tokenizer's tables. Curating
// ten thousand conversations with six strategies peaks at about 100 MiB of
// Go memory with half of it live.
const writerMemoryLimit = 112 << 20

// ingestMemoryLimit is ingest's: the input's decompression window, the JSON
// reader and one commit batch (at most 8 MiB of conversations), about 25 MB
// live. By itself it peaks at about 100 MB of RSS; ingesting 40k
// conversations took 4.5% more CPU time than that under 56 MiB, 3% under
// 64 MiB (issue 28; under 64 MiB the 1M ingest peaked at 91 MB against
// 81-84 MB at 10k).
const ingestMemoryLimit = 64 << 20

// convertMemoryLimit is convert's: the decoders' batches in flight on every
// core, the Parquet row group being filled and the one being encoded. By
// itself it peaks at about 200 MB of RSS; under the writers' 112 MiB it took
// 1.7x the CPU time (issue 28).
const convertMemoryLimit = 256 << 20

// governInterval is how often the governor samples the process.
const governInterval = time.Second

var memoryLimitFlag = &cli.StringFlag{
	Name:    "memory-limit",
	Usage:   "soft limit on the Go heap, e.g. 512MiB or 2GiB, held for the whole command; 'off' for none. Default: governed, i.e. a quarter above what the command needed in its first seconds (15 s and ten collections) and raised when the collector starts to cost CPU, never above 160MiB for the commands that read a run in pages (export, report, status, inspect, run --dry-run), 64MiB for ingest, 256MiB for convert, 112MiB for the others; GOMEMLIMIT, when set, wins",
	EnvVars: []string{"AC3_MEMORY_LIMIT"},
}

// startMemoryLimit applies --memory-limit for every command, or starts the
// governor under the writers' ceiling when the flag is not given.
// GOMEMLIMIT in the environment is the Go runtime's own setting and is left
// alone.
func startMemoryLimit(c *cli.Context, e *env) error {
	if e.getenv("GOMEMLIMIT") != "" {
		return nil
	}
	if v := c.String(memoryLimitFlag.Name); v != "" {
		n, err := memgov.ParseLimit(v)
		if err != nil {
			return fmt.Errorf("--memory-limit %q: %w", v, err)
		}
		if n > 0 && e.setMemoryLimit != nil {
			e.setMemoryLimit(n)
		}
		return nil
	}
	if e.setMemoryLimit == nil {
		return nil
	}
	e.memory = memgov.New(memgov.DefaultPolicy(writerMemoryLimit), e.setMemoryLimit)
	if e.governInterval > 0 {
		go e.memory.Run(c.Context, e.governInterval)
	}
	return nil
}

// memoryCeiling replaces the governor's ceiling with a command's own; a
// limit given on the command line stays as it is.
func memoryCeiling(e *env, n int64) {
	if e.memory != nil {
		e.memory.SetCeiling(n)
	}
}

// setSoftLimit is env.setMemoryLimit in the real program.
func setSoftLimit(n int64) { debug.SetMemoryLimit(n) }
