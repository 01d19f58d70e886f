package export

import (
	_ "embed"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/export.txt
	helpText string
)

// Help is the manual page of 'ac3 export': each kind's columns.
func Help() string { return strings.TrimSuffix(helpText, "\n") }
