package policy

import (
	_ "embed"
	"fmt"
	"strings"
)

// The manual page of 'ac3 policy fit', kept beside the code it describes so
// the two change together.
var (
	//go:embed help/policy-fit.txt
	fitHelpText string
	//go:embed help/policy-needs.txt
	needsHelpText string
)

// fitHelp is what 'ac3 policy fit' prints and stores.
func fitHelp() string { return strings.TrimSuffix(fitHelpText, "\n") }

// needsHelp is what a scored policy is fitted on; %d is MinExamples.
func needsHelp() string { return strings.TrimSuffix(needsHelpText, "\n") }

// Needs says what 'ac3 policy fit' needs in the run: part of its manual
// page, and the advice when a run has too few judged turns.
func Needs() string { return fmt.Sprintf(needsHelp(), MinExamples) }

// FitHelp is the manual page of 'ac3 policy fit'.
func FitHelp() string { return Needs() + "\n\n" + fitHelp() }
