package classify

import (
	_ "embed"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/eval-heuristics.txt
	evalHeuristicsHelpText string
)

// EvalHeuristicsHelp is the manual page of 'ac3 eval-heuristics'.
func EvalHeuristicsHelp() string { return strings.TrimSuffix(evalHeuristicsHelpText, "\n") }
