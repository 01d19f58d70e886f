package memory

import (
	_ "embed"
	"strings"
)

// The manual pages of the memory commands, kept beside the code they
// describe so the two change together.
var (
	//go:embed help/memory-learn.txt
	learnHelpText string
	//go:embed help/memory-show.txt
	showHelpText string
)

// LearnHelp is the manual page of 'ac3 memory learn'.
func LearnHelp() string { return strings.TrimSuffix(learnHelpText, "\n") }

// ShowHelp is the manual page of 'ac3 memory show'.
func ShowHelp() string { return strings.TrimSuffix(showHelpText, "\n") }
