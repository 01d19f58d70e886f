package export

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
)

// The kinds of export, as --what names them.
const (
	KindConversations = "conversations"
	KindCurated       = "curated"
	KindAnnotations   = "annotations"
	KindQuarantine    = "quarantine"
	KindPreferences   = "preferences"
	KindWinners       = "winners"
)

// Kinds lists every kind of export.
func Kinds() []string {
	return []string{KindConversations, KindCurated, KindAnnotations, KindQuarantine, KindPreferences, KindWinners}
}

// AllDimensions is the PreferenceOptions.Dimension that exports every judged
// dimension.
const AllDimensions = "all"

// Dimensions lists what PreferenceOptions.Dimension accepts: each judged
// dimension, then AllDimensions.
func Dimensions() []string { return append(judge.Dimensions(), AllDimensions) }

// CheckKind checks that what is a kind of export that can be written as f.
func CheckKind(what string, f Format) error {
	if !slices.Contains(Kinds(), what) {
		return fmt.Errorf("unknown export %q: want one of %s", what, strings.Join(Kinds(), ", "))
	}
	if f == SFT && what != KindCurated {
		return fmt.Errorf("--format sft applies to --what curated only")
	}
	return nil
}

// Stats says what an export wrote.
type Stats struct {
	Rows int64
	// Skipped counts what was left out, by reason.
	Skipped map[string]int64
}

// SkippedNoReply is why an SFT export leaves out a turn: the dataset has no
// assistant reply to it, so there is nothing to train towards.
const SkippedNoReply = "no reply in the dataset to train towards"

// Write writes the export what of l as f to path.
func Write(ctx context.Context, l *ledger.Ledger, what string, f Format, path string, po PreferenceOptions) (Stats, error) {
	if err := CheckKind(what, f); err != nil {
		return Stats{}, err
	}
	if po.Dimension != "" && !slices.Contains(Dimensions(), po.Dimension) {
		return Stats{}, fmt.Errorf("dimension %q: want %s", po.Dimension, strings.Join(Dimensions(), ", "))
	}
	var st Stats
	var err error
	switch what {
	case KindConversations:
		st.Rows, err = Conversations(ctx, l, f, path)
	case KindCurated:
		var skipped int64
		st.Rows, skipped, err = curated(ctx, l, f, path)
		if skipped > 0 {
			st.Skipped = map[string]int64{SkippedNoReply: skipped}
		}
	case KindAnnotations:
		st.Rows, err = Annotations(ctx, l, f, path)
	case KindQuarantine:
		st.Rows, err = Quarantine(ctx, l, f, path)
	case KindPreferences:
		st.Rows, err = Preferences(ctx, l, f, path, po)
	case KindWinners:
		st.Rows, err = Winners(ctx, l, f, path, po)
	}
	if err != nil {
		return st, fmt.Errorf("exporting %s: %w", what, err)
	}
	return st, nil
}
