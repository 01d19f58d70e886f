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
// held at the footprint the command reached, and raised a step at a time
// only when the collector's share of the CPU climbs. Without it a long
// command's peak crept up with the run's length, because the collector lets
// the heap grow to twice what was live at its last cycle and, over
// thousands of cycles, one lands at the worst moment. A soft limit never
// fails: above it the runtime only collects more often.
//
// The ceilings are the per-command working sets measured at ten thousand
// conversations. readerMemoryLimit is that of the commands that read a run
// in pages (export, report, status, inspect, the dry run): one page of
// conversations and one Parquet row group; the conversation and curated
// exports reach about 150 MiB.
const readerMemoryLimit = 160 << 20

// writerMemoryLimit is every other command's: a page of conversations, a
// commit batch bounded by count and bytes, the tokenizer's tables. Curating
// ten thousand conversations with six strategies peaks at about 100 MiB of
// Go memory with half of it live.
const writerMemoryLimit = 112 << 20

// ingestMemoryLimit is ingest's: the input's decompression window, the JSON
// reader and one commit batch (at most 8 MiB of conversations), about 25 MB
// live.
const ingestMemoryLimit = 56 << 20

// governInterval is how often the governor samples the process.
const governInterval = time.Second

var memoryLimitFlag = &cli.StringFlag{
	Name:    "memory-limit",
	Usage:   "soft limit on the Go heap, e.g. 512MiB or 2GiB, held for the whole command; 'off' for none. Default: governed, i.e. held near what the command needed in its first seconds and raised when the collector starts to cost CPU, never above 160MiB for the commands that read a run in pages (export, report, status, inspect, run --dry-run), 56MiB for ingest, 112MiB for the others; GOMEMLIMIT, when set, wins",
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
