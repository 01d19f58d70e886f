package main

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
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
		n, err := parseMemoryLimit(v)
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

// parseMemoryLimit reads a size as GOMEMLIMIT writes it (a byte count with
// an optional B, KiB, MiB, GiB or TiB suffix; KB, MB, GB and TB are taken
// as powers of 1000), or "off" (0).
func parseMemoryLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") || s == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	mult := int64(1)
	num := s
	for _, u := range units {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			mult, num = u.mult, strings.TrimSpace(s[:len(s)-len(u.suffix)])
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("want a size such as 512MiB, 2GiB or 'off'")
	}
	n := int64(f * float64(mult))
	if n < 16<<20 {
		return 0, fmt.Errorf("%d bytes is too small to run in; give at least 16MiB", n)
	}
	return n, nil
}
