package run

import (
	_ "embed"
	"strings"
)

// The manual pages of the commands about this package's subject, kept
// beside the code they describe so the two change together.
var (
	//go:embed help/annotate.txt
	annotateHelpText string
	//go:embed help/batch.txt
	batchHelpText string
	//go:embed help/ingest.txt
	ingestHelpText string
	//go:embed help/merge.txt
	mergeHelpText string
	//go:embed help/retry.txt
	retryHelpText string
	//go:embed help/status.txt
	statusHelpText string
)

// AnnotateHelp is the manual page of 'ac3 annotate'.
func AnnotateHelp() string { return strings.TrimSuffix(annotateHelpText, "\n") }

// BatchHelp is the manual page of 'ac3 batch'.
func BatchHelp() string { return strings.TrimSuffix(batchHelpText, "\n") }

// IngestHelp is the manual page of 'ac3 ingest'.
func IngestHelp() string { return strings.TrimSuffix(ingestHelpText, "\n") }

// MergeHelp is the manual page of 'ac3 merge'.
func MergeHelp() string { return strings.TrimSuffix(mergeHelpText, "\n") }

// RetryHelp is the manual page of 'ac3 retry'.
func RetryHelp() string { return strings.TrimSuffix(retryHelpText, "\n") }

// StatusHelp is the manual page of 'ac3 status', with its stable JSON fields.
func StatusHelp() string { return strings.TrimSuffix(statusHelpText, "\n") }
