package main

import "github.com/urfave/cli/v2"

// ac3Commands are the AC3 method's own commands (policy fit, memory learn).
func ac3Commands(e *env) []*cli.Command { return nil }
