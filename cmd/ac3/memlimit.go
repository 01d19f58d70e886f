package main

import (
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/memgov"
)

var memoryLimitFlag = &cli.StringFlag{Name: "memory-limit", Usage: memgov.Usage, EnvVars: []string{"AC3_MEMORY_LIMIT"}}

// startMemoryLimit applies --memory-limit for every command (pipeline/memgov
// holds the policy).
func startMemoryLimit(c *cli.Context, e *env) (err error) {
	e.memory, err = memgov.Start(c.Context, c.String(memoryLimitFlag.Name), e.getenv("GOMEMLIMIT"), e.setMemoryLimit, e.governInterval)
	return err
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
