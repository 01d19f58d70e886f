package curate

import (
	_ "embed"
	"fmt"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/curate.txt
	helpText string
	//go:embed help/inspect.txt
	inspectHelpText string
	//go:embed help/memory-learn.txt
	memoryLearnHelpText string
	//go:embed help/memory-show.txt
	memoryShowHelpText string
	//go:embed help/policy-fit.txt
	policyFitHelpText string
	//go:embed help/policy-needs.txt
	policyNeedsHelpText string
)

// Help is the manual page of 'ac3 curate': every strategy and operator.
func Help() string { return strings.TrimSuffix(helpText, "\n") }

// InspectHelp is the manual page of 'ac3 inspect'.
func InspectHelp() string { return strings.TrimSuffix(inspectHelpText, "\n") }

// MemoryLearnHelp is the manual page of 'ac3 memory learn'.
func MemoryLearnHelp() string { return strings.TrimSuffix(memoryLearnHelpText, "\n") }

// MemoryShowHelp is the manual page of 'ac3 memory show'.
func MemoryShowHelp() string { return strings.TrimSuffix(memoryShowHelpText, "\n") }

// policyFitHelp is what 'ac3 policy fit' prints and stores.
func policyFitHelp() string { return strings.TrimSuffix(policyFitHelpText, "\n") }

// policyNeedsHelp is what a scored policy is fitted on; %d is MinPolicyExamples.
func policyNeedsHelp() string { return strings.TrimSuffix(policyNeedsHelpText, "\n") }

// PolicyNeeds says what 'ac3 policy fit' needs in the run: part of its
// manual page, and the advice when a run has too few judged turns.
func PolicyNeeds() string { return fmt.Sprintf(policyNeedsHelp(), MinPolicyExamples) }

// PolicyFitHelp is the manual page of 'ac3 policy fit'.
func PolicyFitHelp() string { return PolicyNeeds() + "\n\n" + policyFitHelp() }
