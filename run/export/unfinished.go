package export

import (
	"context"
	"fmt"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/pollution"
)

// Unfinished is what an export would leave out because the work it reads
// has not been done yet: an input not read to its end, or conversations a
// stage variant has no task for. An export of unfinished work is a smaller
// file that looks whole, so Write refuses it unless Options.Partial.
type Unfinished struct {
	// Inputs are the input files not read to their end.
	Inputs []string
	// Pending counts, per "stage variant", the conversations with no task.
	Pending []PendingWork
}

// PendingWork is one stage variant's conversations without a task.
type PendingWork struct {
	Stage, Variant string
	Conversations  int64
}

func (u Unfinished) empty() bool { return len(u.Inputs) == 0 && len(u.Pending) == 0 }

// String lists what is unfinished: "curate ao: 120 conversations pending;
// input b.jsonl not read to its end".
func (u Unfinished) String() string {
	var parts []string
	for _, p := range u.Pending {
		parts = append(parts, fmt.Sprintf("%s %s: %d conversations pending", p.Stage, p.Variant, p.Conversations))
	}
	for _, in := range u.Inputs {
		parts = append(parts, fmt.Sprintf("input %s not read to its end", in))
	}
	return strings.Join(parts, "; ")
}

// UnfinishedError is Write's refusal of an export of unfinished work.
type UnfinishedError struct {
	What string
	Unfinished
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("the %s export would hold only the work done so far (%s): finish it (run the command that started it again) or pass --partial to export what is done", e.What, e.Unfinished)
}

// unfinished is what the export what would leave out for want of work not
// yet done: the stage variants it reads with conversations pending, and for
// the exports of ingest (conversations, quarantine, duplicates) the inputs
// not read whole. Failed work is not unfinished: it is recorded, the
// closing lines and exit status of the stage say so, and the export counts
// what it leaves out for it.
func unfinished(ctx context.Context, l *ledger.Ledger, what string, opts Options) (Unfinished, error) {
	var u Unfinished
	switch what {
	case KindConversations, KindQuarantine, KindDuplicates:
		ins, err := l.Inputs(ctx)
		if err != nil {
			return u, err
		}
		for _, in := range ins {
			if !in.Finished {
				u.Inputs = append(u.Inputs, in.Path)
			}
		}
		return u, nil
	}
	plans, err := l.Plans(ctx)
	if err != nil {
		return u, err
	}
	var read map[string][]ledger.Variant
	switch what {
	case KindCurated:
		chosen, err := chosenStrategies(l, plans[curate.StageName], opts.Curated.Strategies)
		if err != nil {
			return u, err
		}
		read = map[string][]ledger.Variant{curate.StageName: chosen}
	case KindAnnotations:
		read = map[string][]ledger.Variant{}
		for _, s := range []string{classify.StageName, constraints.StageName, pollution.StageName} {
			read[s] = pickVariant(plans[s])
		}
	case KindPreferences, KindWinners:
		read = map[string][]ledger.Variant{judge.StageName: plans[judge.StageName]}
	}
	for _, stage := range []string{classify.StageName, constraints.StageName, pollution.StageName, curate.StageName, judge.StageName} {
		for _, v := range read[stage] {
			ss, err := l.StageProgress(ctx, stage, v)
			if err != nil {
				return u, err
			}
			if ss.Pending > 0 {
				u.Pending = append(u.Pending, PendingWork{Stage: stage, Variant: v.Name, Conversations: ss.Pending})
			}
		}
	}
	return u, nil
}
