package curate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
)

// StageName is the curate stage's name in unit keys, status and exports.
const StageName = "curate"

// Stage runs strategies as a pipeline stage: one variant per strategy, one
// unit per (conversation, turn, strategy) whose output is the encoded
// Context. All pending strategies of a conversation share one Workspace, so
// each message is tokenized once however many strategies run.
type Stage struct {
	byName  map[string]Strategy
	order   []Strategy
	counter *tokens.Counter
	from    int
	last    int // only the last `last` user turns of each conversation; 0 for all
	// learnedUpTo is the offline cheatsheet's learning split (seq <= it),
	// which the strategies using it leave out; 0 for none.
	learnedUpTo int64
	// fillerWords is the filler strategy's per-word token table for
	// counter's encoding, built on first use and shared by every
	// conversation.
	fillerWords func() *curated.FillerWords
}

// NewStage returns the stage for strategies, counting tokens with counter and
// curating turns from `from` on (DefaultFrom when 0).
func NewStage(strategies []Strategy, counter *tokens.Counter, from int) *Stage {
	if from <= 0 {
		from = DefaultFrom
	}
	s := &Stage{byName: map[string]Strategy{}, order: strategies, counter: counter, from: from}
	s.fillerWords = sync.OnceValue(func() *curated.FillerWords { return curated.NewFillerWords(counter) })
	for _, st := range strategies {
		s.byName[st.Name()] = st
	}
	return s
}

// WithLastTurns makes the stage curate only the final k user turns of each
// conversation (those from `from` on among them): replaying the last turn of
// a simulated trajectory, or probing the last turn of a stitched instance.
// k = 0, the default, curates every turn from `from` on. It returns s.
//
// A stateful operator (the AC3 resets and their cap) starts at the first
// selected turn, as a replay does: earlier turns are the shared prefix,
// neither analyzed nor acted on. The setting goes into the variant versions
// only when k > 0, so runs without it keep their unit keys.
func (s *Stage) WithLastTurns(k int) *Stage {
	s.last = max(k, 0)
	return s
}

// turns is the stage's turn selection.
func (s *Stage) turns() pipeline.Turns { return pipeline.Turns{From: s.from, Last: s.last} }

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Variants implements pipeline.Stage. The version joins the strategy's own
// version with what else changes its output: the tokenizer encoding (token
// counts and filler lengths), the first curated turn and, when set, how
// many final turns are curated.
func (s *Stage) Variants() []pipeline.Variant {
	out := make([]pipeline.Variant, len(s.order))
	last := pipeline.Turns{Last: s.last}.Tag()
	for i, st := range s.order {
		out[i] = pipeline.Variant{Name: st.Name(), Version: fmt.Sprintf("%s;enc=%s;from=%d%s%s", st.Version(), s.counter.Encoding(), s.from, last, s.splitTag(st))}
	}
	return out
}

// ModelWindow implements pipeline.ModelStage: the window of the analyzer's
// endpoint when a strategy calls a model (sum and the AC3 operators), 0
// when every strategy is deterministic. A model-backed strategy's turns
// follow one another (a reset changes the contexts after it, and the cap
// counts resets), so the window is filled by conversations.
func (s *Stage) ModelWindow() int {
	n := 0
	for _, st := range s.order {
		if an := analyzerOf(st); an != nil {
			n = max(n, pipeline.DefaultWindow(an.Client(), an.Role()))
		}
		if lc := llmCompactOf(st); lc != nil {
			n = max(n, pipeline.DefaultWindow(lc.an.Client(), lc.role))
		}
	}
	return n
}

// Prompts returns the prompts of the analyzers the strategies call and
// the users' templates of the operators' texts (none when every strategy
// is deterministic), for the run to say which ones are in use.
func (s *Stage) Prompts() []*prompt.Template {
	var out []*prompt.Template
	seen := map[*analyze.Analyzer]bool{}
	for _, st := range s.order {
		if an := analyzerOf(st); an != nil && !seen[an] {
			seen[an] = true
			out = append(out, an.Prompts()...)
		}
		if lc := llmCompactOf(st); lc != nil && !slices.Contains(out, lc.tmpl) {
			out = append(out, lc.tmpl)
		}
		if f, ok := formOfStrategy(st); ok {
			for _, t := range []*prompt.Template{f.texts.Reset, f.texts.Augment, f.texts.RewriteFrame} {
				if t != nil {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// formOfStrategy returns the form of an AC3 operator's texts.
func formOfStrategy(st Strategy) (form, bool) {
	switch v := st.(type) {
	case *constraintsOverlay:
		return formOfStrategy(v.inner)
	case *Operator:
		return v.form, true
	case *onlineOperator:
		return v.form, true
	}
	return form{}, false
}

// analyzerOf returns the analyzer a strategy calls, nil for one that calls
// no model.
func analyzerOf(st Strategy) *analyze.Analyzer {
	switch v := st.(type) {
	case *constraintsOverlay:
		return analyzerOf(v.inner)
	case *Operator:
		return v.an
	case *onlineOperator:
		return v.an
	case *Summarized:
		return v.an
	case *LLMCompact:
		return v.an
	case *ExtractSC:
		return analyzerOf(v.inner)
	}
	return nil
}

// llmCompactOf returns the llm-compact strategy under st, nil for none.
func llmCompactOf(st Strategy) *LLMCompact {
	switch v := st.(type) {
	case *constraintsOverlay:
		return llmCompactOf(v.inner)
	case *ExtractSC:
		return llmCompactOf(v.inner)
	case *LLMCompact:
		return v
	}
	return nil
}

// Process implements pipeline.Stage.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	ws := s.workspace(t)
	return s.processWith(ctx, t, ws)
}

// workspace returns a new workspace for t's conversation that shares the
// stage's filler table.
func (s *Stage) workspace(t pipeline.Task) *Workspace {
	ws := NewWorkspace(t.Conv, s.counter)
	ws.SetRetry(t.Retry)
	ws.words = s.fillerWords()
	return ws
}

// processWith curates every variant of t with a prepared workspace (the
// online memory puts the conversation's cheatsheet in it first).
func (s *Stage) processWith(ctx context.Context, t pipeline.Task, ws *Workspace) ([]pipeline.Result, error) {
	out := make([]pipeline.Result, 0, len(t.Variants))
	from := s.turns().First(t.Conv.UserTurns())
	// A request deferred to a batch does not stop the other strategies:
	// they queue theirs in the same pass, so one batch round serves all.
	var deferred error
	for _, v := range t.Variants {
		st, ok := s.byName[v.Name]
		if !ok {
			return nil, fmt.Errorf("curating %s: no strategy %q", t.Conv.ID, v.Name)
		}
		if s.excluded(st, t.Seq) {
			out = append(out, pipeline.Result{Variant: v})
			continue
		}
		ctxs, err := st.Contexts(ctx, t.Conv, from, ws)
		if errors.Is(err, llm.ErrDeferred) {
			if deferred == nil {
				deferred = fmt.Errorf("curating %s with %s: %w", t.Conv.ID, v.Name, err)
			}
			continue
		}
		var te *TurnError
		if err != nil && !errors.As(err, &te) {
			return nil, fmt.Errorf("curating %s with %s: %w", t.Conv.ID, v.Name, err)
		}
		units := make([]pipeline.Unit, len(ctxs), len(ctxs)+1)
		for i, x := range ctxs {
			b, err := curated.EncodeContext(x)
			if err != nil {
				return nil, err
			}
			units[i] = pipeline.Unit{Turn: x.Turn, Output: b, Tokens: int64(x.Tokens)}
		}
		if te != nil {
			// Later turns of a stateful strategy depend on this one, so the
			// conversation stops here; the failed task is re-queued whole.
			units = append(units, pipeline.Unit{Turn: te.Turn, Failed: true, Error: te.Err.Error(), Raw: te.Raw})
		}
		out = append(out, pipeline.Result{Variant: v, Units: units})
	}
	if deferred != nil {
		return nil, deferred
	}
	return out, nil
}
