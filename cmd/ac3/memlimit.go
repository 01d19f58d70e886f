package main

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// The commands that read a run in pages (export, report, status, inspect,
// the dry run) have a working set that does not depend on the run's size:
// one page of conversations and one Parquet row group. Their peak RSS still
// crept up with the run's length, because the collector lets the heap grow
// to twice what was live at its last cycle, and over thousands of cycles
// one lands at the worst moment (a row group being encoded while the next
// page is decoded). A soft limit a little above the working set caps that
// slack; above it the runtime only collects more often (at most half the
// CPU), it never fails. 160 MiB sits just above the conversation and
// curated exports' working sets; it is far above the annotations export's,
// which it therefore does not hold flat (issue 9).
const readerMemoryLimit = 160 << 20

// writerMemoryLimit is every other command's default. The writers' working
// sets are bounded too (a page of conversations, a commit batch bounded by
// count and bytes, the tokenizer's tables: curating ten thousand
// conversations with six strategies peaks at about 100 MiB of Go memory
// with half of it live), and without a limit the same slack made curate's
// peak 12% higher at a million conversations than at ten thousand.
// Measured on curate at 10k: 9% more collections under this limit, the
// same CPU time.
const writerMemoryLimit = 112 << 20

// ingestMemoryLimit is ingest's: its working set is the input's
// decompression window, the JSON reader and one commit batch (at most 8
// MiB of conversations), about 25 MB live. Left to the collector alone, its
// peak at a million conversations was 16% above the peak at ten thousand
// (107 MB against 92): a long ingest collects thousands of times, and the
// worst of them sets the peak.
const ingestMemoryLimit = 56 << 20

var memoryLimitFlag = &cli.StringFlag{
	Name:    "memory-limit",
	Usage:   "soft limit on the Go heap, e.g. 512MiB or 2GiB; 'off' for none. Default: 160MiB for the commands that read a run in pages (export, report, status, inspect, run --dry-run), 56MiB for ingest, 112MiB for the others; GOMEMLIMIT, when set, wins",
	EnvVars: []string{"AC3_MEMORY_LIMIT"},
}

// applyMemoryLimit sets the process's soft memory limit from --memory-limit,
// or def (bytes; 0 for none) when the flag is not given. GOMEMLIMIT in the
// environment is the Go runtime's own setting and is left alone.
func applyMemoryLimit(c *cli.Context, e *env, def int64) error {
	if e.getenv("GOMEMLIMIT") != "" {
		return nil
	}
	limit := def
	if v := c.String(memoryLimitFlag.Name); v != "" {
		n, err := parseMemoryLimit(v)
		if err != nil {
			return fmt.Errorf("--memory-limit %q: %w", v, err)
		}
		limit = n
	}
	if limit > 0 && e.setMemoryLimit != nil {
		e.setMemoryLimit(limit)
	}
	return nil
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
