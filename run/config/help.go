package config

import (
	_ "embed"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/run.txt
	helpText string
)

// Help is the manual page of 'ac3 run': what a config file runs, its keys and
// the two knobs of how much runs at once.
func Help() string { return strings.TrimSuffix(helpText, "\n") }
