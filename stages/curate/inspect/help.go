package inspect

import (
	_ "embed"
	"strings"
)

// The manual page of 'ac3 inspect', kept beside the code it describes so
// the two change together.
//
//go:embed help/inspect.txt
var helpText string

// Help is the manual page of 'ac3 inspect'.
func Help() string { return strings.TrimSuffix(helpText, "\n") }
