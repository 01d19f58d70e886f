package convert

import (
	_ "embed"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/convert.txt
	helpText string
)

// Help is the manual page of 'ac3 convert'.
func Help() string { return strings.TrimSuffix(helpText, "\n") }
