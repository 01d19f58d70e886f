package ledger

import (
	_ "embed"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/doctor.txt
	doctorHelpText string
)

// DoctorHelp is the manual page of 'ac3 doctor': the check and the recovery.
func DoctorHelp() string { return strings.TrimSuffix(doctorHelpText, "\n") }
