package run

import (
	"fmt"
	"os"
	"strings"
)

// The modes of deduplication, as --dedupe names them.
const (
	DedupeExact = "exact"
	DedupeNear  = "near"
)

// DedupeArgs reads the value given to --dedupe, raw, with the command's
// file arguments: the mode ("" when off) and the files. Before near existed
// --dedupe took no value and was written just before the files; a value
// that is not a mode but names an existing file is still read that way, as
// exact dedupe and the first file.
func DedupeArgs(raw string, args []string) (mode string, files []string, err error) {
	switch m := strings.ToLower(strings.TrimSpace(raw)); m {
	case DedupeExact, DedupeNear, "true":
		if _, err := os.Stat(raw); err == nil {
			return "", nil, fmt.Errorf("--dedupe %s: a file named %s exists here; write --dedupe exact %s for the file, or ./%s", raw, raw, raw, raw)
		}
		if m == "true" {
			m = DedupeExact
		}
		return m, args, nil
	case "false", "off":
		return "", args, nil
	}
	if strings.HasPrefix(raw, "-") {
		return "", nil, fmt.Errorf("--dedupe takes a mode, %s or %s, and got the flag %s: write --dedupe %s (or %s) before it", DedupeExact, DedupeNear, raw, DedupeExact, DedupeNear)
	}
	if _, err := os.Stat(raw); err == nil {
		return DedupeExact, append([]string{raw}, args...), nil
	}
	return "", nil, fmt.Errorf("--dedupe %q: want %s or %s", raw, DedupeExact, DedupeNear)
}
