package agreement

import _ "embed"

//go:embed help.txt
var help string

// Help is the agreement command's description for --help.
func Help() string { return help }
