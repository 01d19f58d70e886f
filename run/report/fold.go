package report

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/respond"
)

// pageSize is how many conversations the report reads at a time. Every
// stage's units of one page are read before the next page, so the turn
// types of a page can be joined with its verdicts and curated contexts
// without holding any other page.
const pageSize = 512

// fold is the report being built page by page. What it keeps across pages
// is bounded by the number of stages, variants, dimensions, turn types and
// rounds, with one exception: the conversation bootstrap needs each
// conversation's counts, so the judge pairs keep a record of 3–4 bytes per
// conversation and summary (see verdictTally) and the report the ids of the
// conversations with a verdict (see convTable).
type fold struct {
	so        stats.Options
	ann       *annotationFold
	pairs     []*pairFold
	judgeInfo *judgeInfo
	respond   []*respondFold
	cur       *curationFold
	convs     *convTable
	arms      *armFold
	replies   *replyFold
	answers   *pageAnswers        // contexts and answer lengths of the page being read
	types     map[pageTurn]string // turn types of the page being read
	progress  *progressLog
	level     float64
	compint   *compintFold // nil when the run has no CompInt stage
}

func newFold(plans map[string][]ledger.Variant, so stats.Options, level float64) *fold {
	f := &fold{
		so: so, level: level,
		ann:       newAnnotationFold(plans),
		judgeInfo: newJudgeInfo(),
		cur:       newCurationFold(plans),
		convs:     newConvTable(),
		arms:      newArmFold(plans[judge.StageName]),
		replies:   newReplyFold(plans),
		answers:   newPageAnswers(),
		types:     map[pageTurn]string{},
		progress:  newProgressLog(),
	}
	for _, v := range plans[judge.StageName] {
		f.pairs = append(f.pairs, newPairFold(v, so.Seed))
		f.progress.watch(judge.StageName, v.Name)
	}
	for _, v := range plans[respond.StageName] {
		f.respond = append(f.respond, &respondFold{row: RespondRow{Variant: v.Name}, v: v, models: set{}, endpoints: set{}})
		f.progress.watch(respond.StageName, v.Name)
	}
	for _, v := range f.cur.variants {
		f.progress.watch(curate.StageName, v.Name)
	}
	f.ann.watch(f.progress)
	f.replies.watch(f.progress)
	return f
}

// page reads every stage's units of the conversations with after < seq <=
// upto: annotations first, so the page's turn types are known, then the
// curated contexts and the generated answers, so the verdicts can be
// joined with the answers' lengths and with whether both strategies built
// the same context.
func (f *fold) page(ctx context.Context, src Source, after, upto int64) error {
	clear(f.types)
	f.answers.reset()
	if err := f.ann.page(ctx, src, after, upto, f.types, f.progress); err != nil {
		return err
	}
	if err := f.cur.page(ctx, src, after, upto, f.types, f.progress, f.answers); err != nil {
		return err
	}
	if err := f.replies.page(ctx, src, after, upto, f.progress); err != nil {
		return err
	}
	for _, rf := range f.respond {
		err := src.Units(ctx, respond.StageName, []ledger.Variant{rf.v}, after, upto, func(u ledger.Unit) error {
			f.progress.add(respond.StageName, u)
			return rf.add(u, f.answers)
		})
		if err != nil {
			return err
		}
	}
	for i, p := range f.pairs {
		err := src.Units(ctx, judge.StageName, []ledger.Variant{p.v}, after, upto, func(u ledger.Unit) error {
			f.progress.add(judge.StageName, u)
			return p.add(u, pageJoin{types: f.types, answers: f.answers, arms: f.arms, index: i}, f.convs, f.judgeInfo)
		})
		if err != nil {
			return err
		}
	}
	f.arms.endPage()
	if err := f.compint.page(ctx, src, after, upto, f.progress); err != nil {
		return err
	}
	return f.convs.endPage()
}

// fill writes the folded numbers into r once every page was read.
func (f *fold) fill(r *Report) error {
	ranks := f.convs.ranks()
	for _, p := range f.pairs {
		pr, err := p.report(f.convs, ranks, f.so)
		if err != nil {
			return err
		}
		r.Pairs = append(r.Pairs, pr)
	}
	f.judgeInfo.fill(r)
	arms, err := f.arms.rows()
	if err != nil {
		return err
	}
	r.Arms = arms
	for _, rf := range f.respond {
		r.Respond = append(r.Respond, rf.report())
	}
	f.cur.fill(r, f.level)
	r.Annotations = f.ann.annotations()
	r.ReplyPollution = f.replies.report()
	f.compint.fill(r)
	return nil
}

// doneOutput counts u in done or failed and decodes the output of a done
// unit; ok is false for a failed one or an output that does not decode
// (err says which unit, what naming its stage). The respond and judge
// folds start on every unit this way.
func doneOutput[T any](u ledger.Unit, done, failed *int, what string, decode func([]byte) (T, error)) (o T, ok bool, err error) {
	if u.Status != ledger.Done {
		*failed++
		return o, false, nil
	}
	*done++
	if o, err = decode(u.Output); err != nil {
		return o, false, fmt.Errorf("reading %s unit %s: %w", what, u.Key, err)
	}
	return o, true, nil
}

// respondFold folds the units of one respond variant.
type respondFold struct {
	v                 ledger.Variant
	row               RespondRow
	models, endpoints set
	compl, ctxTok     int64
}

func (rf *respondFold) add(u ledger.Unit, answers *pageAnswers) error {
	o, ok, err := doneOutput(u, &rf.row.UnitsDone, &rf.row.UnitsFailed, "respond", respond.Decode)
	if !ok {
		return err
	}
	answers.addAnswers(u.ConvSeq, u.Turn, rf.v.Name, o)
	rf.models.add(o.Model)
	rf.endpoints.add(o.Endpoint)
	rf.ctxTok += int64(o.ContextTokens)
	for _, s := range o.Samples {
		rf.row.Samples++
		rf.compl += int64(s.CompletionTokens)
		if s.Reasoning != "" {
			rf.row.WithReasoning++
		}
	}
	return nil
}

func (rf *respondFold) report() RespondRow {
	row := rf.row
	row.MeanCompletion, row.MeanContextToks = ratio(rf.compl, row.Samples), ratio(rf.ctxTok, row.UnitsDone)
	row.Models, row.Endpoints = rf.models.sorted(), rf.endpoints.sorted()
	return row
}
