package judge

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/respond"
)

// StageName is the judge stage's name in unit keys, status and reports.
const StageName = "judge"

// DefaultRole is the role that judges.
const DefaultRole = "judge"

// version is bumped when what a unit stores or how it is produced changes.
const version = "judge/v1"

// The judge context variants.
const (
	ContextFull        = "full"
	ContextUserOnly    = "user_only"
	ContextFinalAnswer = "final_answer_only"
)

// The order modes.
const (
	OrderRandom = "random"
	OrderBoth   = "both"
)

//go:embed prompts/pairwise.tmpl
var pairwiseText []byte

// Template returns the pairwise judge prompt.
func Template() *prompt.Template { return prompt.MustParse("pairwise", pairwiseText) }

// promptData is what the pairwise prompt is rendered with. Open, Close,
// Answer and JSON are the verdict's form (the contract).
type promptData struct {
	Open, Close, Answer string
	JSON                bool
	Note                string         // what the history shows (the judge context)
	History             []conv.Message // the conversation up to u_t, as the context shows it
	First, Second       string         // the candidates shown as A and B
}

// PromptSpec declares the pairwise prompt for a user's template that
// replaces it (Options.Prompt; stages.judge.prompts.pairwise in the config):
// it is rendered with .Note, .History (the conversation as the judge context
// shows it), .First and .Second (the candidates labelled A and B) and must
// show .History, .First and .Second; the verdict's form is ac3's.
func PromptSpec() prompt.Spec {
	return prompt.Spec{Name: "pairwise", Data: reflect.TypeFor[promptData](), Needs: []string{"History", "First", "Second"}, Contract: []string{"Open", "Close", "Answer", "JSON"}}
}

// contract states the verdict's form at the end of a user's template, in
// the words of the shipped prompt.
func contract(d promptData) string {
	if d.JSON {
		return "Answer with one JSON object in exactly this shape (confidence is your certainty from 0 to 1):\n" + d.Answer
	}
	return "Answer with a single block that starts with " + d.Open + " and ends with " + d.Close + ", containing one JSON object in exactly this shape (confidence is your certainty from 0 to 1):\n" + d.Answer
}

// Pair is two respond variants compared against each other.
type Pair struct{ A, B string }

// String renders the pair as written in configs: "A:B".
func (p Pair) String() string { return p.A + ":" + p.B }

// ParsePair reads "A:B".
func ParsePair(s string) (Pair, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if !ok || a == "" || b == "" || strings.Contains(b, ":") {
		return Pair{}, fmt.Errorf("parsing pair %q: want two strategies as A:B, e.g. gated-reset:ao", s)
	}
	if a == b {
		return Pair{}, fmt.Errorf("parsing pair %q: a strategy against itself", s)
	}
	return Pair{a, b}, nil
}

// VariantName is the stage variant of a pair judged with context cx.
func VariantName(p Pair, cx string) string {
	if cx == "" || cx == ContextFull {
		return p.String()
	}
	return p.String() + "/" + cx
}

// UnitReader reads stored units of earlier stages; *ledger.Ledger
// satisfies it.
type UnitReader interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// Options configure the stage.
type Options struct {
	Pairs   []Pair
	Context string // full (default) | user_only | final_answer_only
	Order   string // random (default, as both papers) | both (stricter)
	Seed    int64  // the run seed; random orders are drawn from it
	// RespondVersions gives, per respond variant, the version to read (the
	// respond stage's current plan).
	RespondVersions map[string]string
	Role            string // default DefaultRole
	// Settings describes the judge's model and parameters (cmd fills it);
	// it is part of the unit version.
	Settings string
	Retries  int // re-asks after a malformed verdict; default 2
	// Turns selects the turns judged: from a turn on, and only the last K
	// user turns of each conversation. The zero Turns judges every turn both
	// strategies answered; a setting goes into the versions only when set.
	Turns pipeline.Turns
	// Prompt replaces the pairwise prompt: a user's template, parsed and
	// checked with prompt.ParseFile against PromptSpec. nil keeps ours.
	// Its version goes into every variant's.
	Prompt *prompt.Template
}

// Stage is the judge pipeline stage.
type Stage struct {
	client   *llm.Client
	units    UnitReader
	opts     Options
	tmpl     *prompt.Template
	variants []pipeline.Variant
	pairs    map[string]Pair
	out      parse.Output // how the judge's model is asked for verdicts
}

// New returns the stage. It checks the settings and that both sides of
// every pair have been answered in this run.
func New(client *llm.Client, units UnitReader, opts Options) (*Stage, error) {
	if opts.Context == "" {
		opts.Context = ContextFull
	}
	if opts.Order == "" {
		opts.Order = OrderRandom
	}
	if opts.Role == "" {
		opts.Role = DefaultRole
	}
	if opts.Retries == 0 {
		opts.Retries = 2
	}
	switch opts.Context {
	case ContextFull, ContextUserOnly, ContextFinalAnswer:
	default:
		return nil, fmt.Errorf("building judge stage: context %q is not one of full, user_only, final_answer_only", opts.Context)
	}
	switch opts.Order {
	case OrderRandom, OrderBoth:
	default:
		return nil, fmt.Errorf("building judge stage: order %q is not one of random, both", opts.Order)
	}
	if len(opts.Pairs) == 0 {
		return nil, errors.New("building judge stage: no pairs")
	}
	if err := opts.Turns.Validate(); err != nil {
		return nil, fmt.Errorf("building judge stage: %w", err)
	}
	tmpl := Template()
	if opts.Prompt != nil {
		if opts.Prompt.Name() != "pairwise" {
			return nil, fmt.Errorf("building judge stage: the template given is for the %s prompt, not pairwise", opts.Prompt.Name())
		}
		tmpl = opts.Prompt
	}
	s := &Stage{client: client, units: units, opts: opts, tmpl: tmpl, pairs: map[string]Pair{}, out: client.Output(opts.Role)}
	for _, p := range opts.Pairs {
		va, oka := opts.RespondVersions[p.A]
		vb, okb := opts.RespondVersions[p.B]
		switch {
		case !oka:
			return nil, fmt.Errorf("building judge stage: pair %s: %q has no answers in this run (add it to respond)", p, p.A)
		case !okb:
			return nil, fmt.Errorf("building judge stage: pair %s: %q has no answers in this run (add it to respond)", p, p.B)
		}
		name := VariantName(p, opts.Context)
		if _, dup := s.pairs[name]; dup {
			return nil, fmt.Errorf("building judge stage: pair %s appears twice", p)
		}
		s.pairs[name] = p
		ver := fmt.Sprintf("%s;prompt=%s;context=%s;order=%s", version, s.tmpl.Version(), opts.Context, opts.Order)
		if opts.Order == OrderRandom {
			ver += fmt.Sprintf(";seed=%d", opts.Seed)
		}
		ver += fmt.Sprintf(";a=%s;b=%s;role=%s;model=%s", va, vb, opts.Role, opts.Settings) + opts.Turns.Tag()
		if s.out == parse.JSONSchema {
			ver += ";output=" + string(s.out)
		}
		s.variants = append(s.variants, pipeline.Variant{Name: name, Version: ver})
	}
	return s, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// ModelWindow implements pipeline.ModelStage: the window of the judge's
// endpoint.
func (s *Stage) ModelWindow() int { return pipeline.DefaultWindow(s.client, s.opts.Role) }

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant { return s.variants }

// Prompts returns the prompt the stage renders, for the run to say which
// one is in use.
func (s *Stage) Prompts() []*prompt.Template { return []*prompt.Template{s.tmpl} }

// FirstShown draws which strategy is shown first under order random: a
// hash of the seed, the conversation, the turn, the pair and the sample, so
// the draw is reproducible and independent between calls.
func FirstShown(seed int64, convID string, turn int, pair string, sample int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%d\x00%s\x00%d", seed, convID, turn, pair, sample)
	if h.Sum64()>>63 == 0 {
		return "A"
	}
	return "B"
}

// callJob is one judge call.
type callJob struct {
	turn                      int
	variant, unit, comp, call int
	msgs                      []conv.Message
	tagger                    parse.Tagger
}

// Process implements pipeline.Stage. Each selected turn (Options.Turns)
// where both strategies of a pair have answers becomes one unit with a comparison per sample index
// both have. A verdict still malformed after retries, or a rejected
// request, fails its unit with the raw answer kept; errors that would fail
// every unit are returned.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	// respond variant → turn → output
	answers, err := respond.ReadPlanned(ctx, s.units, respond.StageName, t.Conv.ID, "answers", s.opts.RespondVersions, decodeAnswer)
	if err != nil {
		return nil, err
	}
	results := make([]pipeline.Result, len(t.Variants))
	states := make([][]*respond.Pending[Output], len(t.Variants)) // the units of each result
	var jobs []callJob
	userTurns := t.Conv.UserTurns()
	for vi, v := range t.Variants {
		p, ok := s.pairs[v.Name]
		if !ok {
			return nil, fmt.Errorf("judging %s: no variant %q", t.Conv.ID, v.Name)
		}
		results[vi].Variant = v
		for _, tr := range t.Conv.Turns() {
			if !s.opts.Turns.Has(tr.Index, userTurns) {
				continue
			}
			oa, oka := answers[p.A][tr.Index]
			ob, okb := answers[p.B][tr.Index]
			if !oka || !okb {
				continue
			}
			st := &respond.Pending[Output]{Turn: tr.Index, Out: Output{
				Pair: v.Name, A: p.A, B: p.B, Context: s.opts.Context, Order: s.opts.Order, Seed: s.opts.Seed, Prompt: s.tmpl.Version(),
			}}
			history := s.history(t.Conv, tr.Index)
			for _, sa := range oa.Samples {
				sb, ok := ob.Sample(sa.Index)
				if !ok || strings.TrimSpace(sa.Text) == "" || strings.TrimSpace(sb.Text) == "" {
					continue
				}
				cmp := Comparison{Sample: sa.Index, Outcome: map[string]string{}}
				if strings.TrimSpace(sa.Text) == strings.TrimSpace(sb.Text) {
					cmp.Identical = true
					for _, d := range Dimensions() {
						cmp.Outcome[d] = stats.Tie.String()
					}
					st.Out.Comparisons = append(st.Out.Comparisons, cmp)
					continue
				}
				firsts := []string{"A", "B"}
				if s.opts.Order == OrderRandom {
					firsts = []string{FirstShown(s.opts.Seed, t.Conv.ID, tr.Index, v.Name, sa.Index)}
				}
				ci := len(st.Out.Comparisons)
				for k, first := range firsts {
					one, two := s.candidate(sa), s.candidate(sb)
					if first == "B" {
						one, two = two, one
					}
					msgs, tg, err := s.render(history, one, two)
					if err != nil {
						return nil, err
					}
					cmp.Calls = append(cmp.Calls, Call{First: first})
					jobs = append(jobs, callJob{turn: tr.Index, variant: vi, unit: len(states[vi]), comp: ci, call: k, msgs: msgs, tagger: tg})
				}
				st.Out.Comparisons = append(st.Out.Comparisons, cmp)
			}
			if len(st.Out.Comparisons) > 0 {
				states[vi] = append(states[vi], st)
			}
		}
	}
	// Every call of a turn (each pair, order and sample) repeats the same
	// system message and history, and the next turn's history extends this
	// one's: sent turn by turn, they meet a provider's prompt cache while it
	// still holds that prefix.
	slices.SortStableFunc(jobs, func(a, b callJob) int { return a.turn - b.turn })
	got, err := respond.FanOut(ctx, t, len(jobs), func(ctx context.Context, k int) (verdictAnswer, llm.Response, error) {
		j := jobs[k]
		req := llm.Request{Role: s.opts.Role, Stage: StageName, Messages: j.msgs, CompletionEstimate: 300, Reroll: t.Retry * (s.opts.Retries + 1)}
		if s.out == parse.JSONSchema {
			form := verdictForm()
			req.Schema = &llm.Schema{Name: form.Name, Schema: form.Schema()}
		}
		return llm.CallParsed(ctx, s.client, req, s.opts.Retries, parseVerdict(s.out, j.tagger))
	})
	if err != nil {
		return nil, fmt.Errorf("judging %s: %w", t.Conv.ID, err)
	}
	for k, j := range jobs {
		st, a := states[j.variant][j.unit], got[k]
		c := &st.Out.Comparisons[j.comp].Calls[j.call]
		if a.Err != nil {
			st.Fail(fmt.Sprintf("sample %d, %s shown first", st.Out.Comparisons[j.comp].Sample, c.First), a.Err)
			continue
		}
		st.Tokens += int64(a.Resp.Usage.Prompt + a.Resp.Usage.Completion)
		c.Model, c.Endpoint = a.Resp.Model, a.Resp.Endpoint
		c.Verdicts = map[string]DimVerdict{}
		for _, d := range Dimensions() {
			dv := a.Value.dim(d)
			shown, _ := stats.ParseOutcome(dv.Winner) // validated by the parser
			c.Verdicts[d] = DimVerdict{
				Shown: shown.String(), Outcome: toStrategies(shown, c.First).String(),
				Justification: strings.TrimSpace(dv.Justification), Confidence: confidence(dv.Confidence),
			}
		}
	}
	for vi := range results {
		for _, st := range states[vi] {
			if !st.Failed() {
				for ci := range st.Out.Comparisons {
					combine(&st.Out.Comparisons[ci], s.opts.Order)
				}
			}
			u, err := st.Unit()
			if err != nil {
				return nil, fmt.Errorf("encoding verdicts of %s turn %d: %w", t.Conv.ID, st.Turn, err)
			}
			results[vi].Units = append(results[vi].Units, u)
		}
	}
	return results, nil
}

// decodeAnswer reads one of respond's units.
func decodeAnswer(u ledger.Unit) (respond.Output, error) {
	o, err := respond.Decode(u.Output)
	if err != nil {
		return o, fmt.Errorf("reading answer %s: %w", u.Key, err)
	}
	return o, nil
}

// combine fills a comparison's per-dimension outcome from its calls.
func combine(c *Comparison, order string) {
	if c.Identical || len(c.Calls) == 0 {
		return
	}
	if order == OrderBoth && len(c.Calls) == 2 {
		c.Consistent = map[string]bool{}
		for _, d := range Dimensions() {
			af, _ := stats.ParseOutcome(c.Calls[0].Verdicts[d].Outcome)
			bf, _ := stats.ParseOutcome(c.Calls[1].Verdicts[d].Outcome)
			o, ok := stats.Combine(af, bf)
			c.Outcome[d], c.Consistent[d] = o.String(), ok
		}
		return
	}
	for _, d := range Dimensions() {
		c.Outcome[d] = c.Calls[0].Verdicts[d].Outcome
	}
}

// toStrategies maps a verdict given by position (A = shown first) to the
// strategies, given which strategy was shown first.
func toStrategies(shown stats.Outcome, first string) stats.Outcome {
	if first == "A" || shown == stats.Tie {
		return shown
	}
	if shown == stats.AWins {
		return stats.BWins
	}
	return stats.AWins
}

// history is what the judge sees of the conversation before turn t.
func (s *Stage) history(c *conv.Conversation, t int) []conv.Message {
	switch s.opts.Context {
	case ContextUserOnly:
		return conv.NewUserView(c, t).Messages()
	case ContextFinalAnswer:
		msgs, _ := c.ContextBefore(t)
		for i, m := range msgs {
			if m.Role == conv.Assistant {
				msgs[i].Content, _ = parse.SplitThink(m.Content)
				msgs[i].Content = strings.TrimSpace(msgs[i].Content)
			}
		}
		return msgs
	}
	msgs, _ := c.ContextBefore(t)
	return msgs
}

// candidate is how an answer is shown: with its reasoning trace in front
// under the full context, the answer alone otherwise.
func (s *Stage) candidate(smp respond.Sample) string {
	if s.opts.Context == ContextFull && strings.TrimSpace(smp.Reasoning) != "" {
		return "<think>\n" + strings.TrimSpace(smp.Reasoning) + "\n</think>\n" + strings.TrimSpace(smp.Text)
	}
	return strings.TrimSpace(smp.Text)
}

var notes = map[string]string{
	ContextFull:        "The conversation so far, as it happened (the assistant turns are the original ones, not the candidates'):",
	ContextUserOnly:    "The conversation so far, with the assistant's earlier replies left out (only the user's messages are shown):",
	ContextFinalAnswer: "The conversation so far, as it happened, with the assistant's reasoning traces removed:",
}

// render builds the judge prompt for one call with the candidates in the
// given positions.
func (s *Stage) render(history []conv.Message, first, second string) ([]conv.Message, parse.Tagger, error) {
	parts := make([]string, 0, len(history)+2)
	for _, m := range history {
		parts = append(parts, string(m.Role), m.Content)
	}
	tg := parse.NewTagger(append(parts, first, second)...)
	d := promptData{
		Open: tg.Open(verdictTag), Close: tg.Close(verdictTag),
		Answer: verdictForm().Layout(s.out, tg), JSON: s.out == parse.JSONSchema,
		Note: notes[s.opts.Context], History: history, First: first, Second: second,
	}
	msgs, err := s.tmpl.RenderAnswer(d, contract(d))
	return msgs, tg, err
}
