package llm

import (
	_ "embed"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/ping.txt
	pingHelpText string
)

// PingHelp is the manual page of 'ac3 llm ping'.
func PingHelp() string { return strings.TrimSuffix(pingHelpText, "\n") }
