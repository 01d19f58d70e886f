package curate

import (
	_ "embed"
	"strings"
)

// The manual page of 'ac3 curate', kept beside the code it describes so the
// two change together. The pages of the commands about the memory, the
// adaptive policy and inspect are in those packages.
//
//go:embed help/curate.txt
var helpText string

// Help is the manual page of 'ac3 curate': every strategy and operator.
func Help() string { return strings.TrimSuffix(helpText, "\n") }
