package export

import (
	"cmp"
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
	return []string{KindConversations, KindCurated, KindAnnotations, KindQuarantine, KindDuplicates, KindPreferences, KindWinners}
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

// FileName is the file an export of what as format is written to when no
// path is given (a config's export without "out"): the kind, then the
// format's extension. SFT is JSONL, so it ends in .jsonl too
// ("curated.sft.jsonl"), and its metadata goes beside it (MetaPath).
func FileName(what, format string) string {
	name := strings.ReplaceAll(what, " ", "_")
	switch f := strings.ToLower(format); f {
	case "jsonl-zst":
		return name + ".jsonl.zst"
	case string(SFT):
		return name + ".sft.jsonl"
	default:
		return name + "." + f
	}
}

// Options choose what an export holds beyond its kind and format.
type Options struct {
	Preferences PreferenceOptions // preferences and winners
	Curated     CuratedOptions    // curated
	// Partial exports what is done although the work the export reads is
	// unfinished (see Unfinished); the summary line says what is missing.
	// Without it such an export is an *UnfinishedError.
	Partial bool
}

// Check refuses options that do not apply to what.
func (o Options) Check(what string) error {
	if len(o.Curated.Strategies) > 0 && what != KindCurated {
		return fmt.Errorf("--strategies applies to --what curated only")
	}
	if o.Curated.TrainOn != "" {
		if what != KindCurated {
			return fmt.Errorf("--train-on applies to --what curated --format sft only")
		}
		if !slices.Contains([]TrainOn{TrainReplies, TrainTarget}, o.Curated.TrainOn) {
			return fmt.Errorf("--train-on %q: want %s or %s", o.Curated.TrainOn, TrainReplies, TrainTarget)
		}
	}
	po := o.Preferences
	if po.Dimension != "" && !slices.Contains(Dimensions(), po.Dimension) {
		return fmt.Errorf("--dimension %q: want %s", po.Dimension, strings.Join(Dimensions(), ", "))
	}
	switch po.Pairs {
	case "", PairsAll:
	case PairsSamePrompt:
		if what != KindPreferences {
			return fmt.Errorf("--pairs %s applies to --what preferences only", PairsSamePrompt)
		}
		if po.PromptStrategy != "" {
			return fmt.Errorf("--pairs %s takes the prompt both answers were generated from; it cannot be combined with --prompt-strategy", PairsSamePrompt)
		}
	default:
		return fmt.Errorf("--pairs %q: want %s or %s", po.Pairs, PairsAll, PairsSamePrompt)
	}
	return nil
}

// Stats says what an export wrote.
type Stats struct {
	Rows int64
	// Skipped counts what was left out, by reason (the Skipped* constants).
	Skipped map[string]int64
	// Strategies are the curate strategies a curated export holds.
	Strategies []string
	// Files are the files written beside the export: the SFT metadata.
	Files []string
	// Unfinished is the work not yet done that a --partial export left out.
	Unfinished Unfinished
}

// Reasons a row is left out of an export, as Stats.Skipped counts them.
const (
	// SkippedNoReply: an SFT export leaves out a turn the dataset has no
	// assistant reply to, since there is nothing to train towards.
	SkippedNoReply = "no reply in the dataset to train towards"
	// SkippedStrategy: a curated context of a strategy --strategies left out.
	SkippedStrategy = "strategy not chosen (--strategies)"
	// SkippedFailed: the curate unit of the turn failed ('ac3 retry').
	SkippedFailed = "curation failed at the turn"
	// SkippedDuplicate: a row equal to one written earlier (preferences:
	// the same prompt, chosen and rejected; winners: the same messages).
	SkippedDuplicate = "exact duplicate of an earlier row"
	// SkippedTie: the verdict was a tie on the dimension exported.
	SkippedTie = "tie"
	// SkippedIdentical: the two answers were the same text (a tie without
	// a call to the judge).
	SkippedIdentical = "identical answers"
	// SkippedInconsistent: order both, and the two orders disagreed (see
	// --include-inconsistent; flips are never exported).
	SkippedInconsistent = "the two orders disagreed"
	// SkippedRegenerated: the answers judged are no longer in the run.
	SkippedRegenerated = "answers regenerated since the verdict"
	// SkippedNoPrompt: the run has no curated context of the prompt strategy
	// at the turn.
	SkippedNoPrompt = "no curated context for the prompt"
	// SkippedDifferentPrompts: --pairs same-prompt, and the two answers were
	// generated from different contexts.
	SkippedDifferentPrompts = "answers generated from different contexts (--pairs same-prompt)"
)

// Summary is the line that says what an export of what to out wrote and
// left out, e.g. "wrote 120 curated rows to train.jsonl (strategies fc, ao;
// metadata in train.meta.jsonl); left out 45: 30 strategy not chosen
// (--strategies), 15 no reply in the dataset to train towards". Reasons
// come in decreasing count, so the line reads the same on every run.
func (s Stats) Summary(what, out string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wrote %d %s rows to %s", s.Rows, what, out)
	var notes []string
	if len(s.Strategies) > 0 {
		notes = append(notes, "strategies "+strings.Join(s.Strategies, ", "))
	}
	if len(s.Files) > 0 {
		notes = append(notes, "metadata in "+strings.Join(s.Files, ", "))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
	}
	type reason struct {
		why string
		n   int64
	}
	var rs []reason
	var total int64
	for why, n := range s.Skipped {
		if n > 0 {
			rs = append(rs, reason{why, n})
			total += n
		}
	}
	if total == 0 {
		s.partialNote(&b)
		return b.String()
	}
	slices.SortFunc(rs, func(a, b reason) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.why, b.why))
	})
	fmt.Fprintf(&b, "; left out %d:", total)
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %d %s", r.n, r.why)
	}
	s.partialNote(&b)
	return b.String()
}

// partialNote ends the summary of a --partial export with what it lacks.
func (s Stats) partialNote(b *strings.Builder) {
	if !s.Unfinished.empty() {
		fmt.Fprintf(b, "; partial (--partial): %s", s.Unfinished)
	}
}

// skips counts rows left out by reason; nil until the first.
type skips map[string]int64

func (s *skips) add(why string) {
	if *s == nil {
		*s = skips{}
	}
	(*s)[why]++
}

// Write writes the export what of l as f to path.
func Write(ctx context.Context, l *ledger.Ledger, what string, f Format, path string, opts Options) (Stats, error) {
	if err := CheckKind(what, f); err != nil {
		return Stats{}, err
	}
	if err := opts.Check(what); err != nil {
		return Stats{}, err
	}
	if opts.Curated.TrainOn != "" && f != SFT {
		return Stats{}, fmt.Errorf("--train-on applies to --format sft only")
	}
	var st Stats
	u, err := unfinished(ctx, l, what, opts)
	if err != nil {
		return st, fmt.Errorf("exporting %s: %w", what, err)
	}
	if !u.empty() {
		if !opts.Partial {
			return st, &UnfinishedError{What: what, Unfinished: u}
		}
	}
	switch what {
	case KindConversations:
		st.Rows, err = Conversations(ctx, l, f, path)
	case KindCurated:
		st, err = exportCurated(ctx, l, f, path, opts.Curated)
	case KindAnnotations:
		st.Rows, err = Annotations(ctx, l, f, path)
	case KindQuarantine:
		st.Rows, err = Quarantine(ctx, l, f, path)
	case KindDuplicates:
		st.Rows, err = Duplicates(ctx, l, f, path)
	case KindPreferences:
		st, err = preferences(ctx, l, f, path, opts.Preferences)
	case KindWinners:
		st, err = winners(ctx, l, f, path, opts.Preferences)
	}
	st.Unfinished = u
	if err != nil {
		return st, fmt.Errorf("exporting %s: %w", what, err)
	}
	return st, nil
}
