package pollution

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/annotator"
)

// StageName is the stage's name in unit keys, status and exports.
const StageName = "pollution"

// Categories lists the pollution categories in report order.
func Categories() []string {
	return []string{"intent_override", "code_carryover", "factual_hallucination_carryover", "reasoning_trace_carryover", "formula_carryover"}
}

// Label is the stored output of one pollution unit (assistant turn a_t).
type Label struct {
	Present       bool     `json:"present"`
	Category      string   `json:"category"` // "" when absent
	Sources       []string `json:"sources"`  // [] when absent
	Confidence    float64  `json:"confidence"`
	Justification string   `json:"justification"`
	Annotator     string   `json:"annotator"`
}

// Encode returns the stored form of l.
func (l Label) Encode() ([]byte, error) {
	if l.Sources == nil {
		l.Sources = []string{}
	}
	return json.Marshal(l)
}

// Decode reads the stored output of a unit that reviewed a dataset reply
// (variant "llm"). The output of a unit on generated replies (a
// "responses:" variant) is refused with an error saying so: read as a
// Label it would look like a clean reply, which would count as "not
// polluted" instead of failing.
func Decode(b []byte) (Label, error) {
	var probe struct {
		Samples json.RawMessage `json:"samples"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return Label{}, fmt.Errorf("decoding pollution label: %w", err)
	}
	if probe.Samples != nil {
		return Label{}, errors.New("decoding pollution label: this unit reviewed generated replies; read it with DecodeGenerated")
	}
	var l Label
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("decoding pollution label: %w", err)
	}
	return l, nil
}

//go:embed prompts/pollution.tmpl
var promptText []byte

// Prompt returns the parsed pollution prompt.
func Prompt() *prompt.Template { return prompt.MustParse("pollution", promptText) }

// PromptSpec declares the pollution prompt for a user's template that
// replaces it (LLM.Template; stages.pollution.prompts.pollution in the
// config): it is rendered with an annotator.Transcript of C_t followed by
// the reply to review, tagged "now", and must show .Messages; the answer's
// form is ac3's.
func PromptSpec() prompt.Spec { return annotator.TranscriptSpec("pollution") }

// OriginDataset marks replies taken from the conversation itself.
const OriginDataset = "dataset"

// Input is one reply to review: the history before it and the reply.
type Input struct {
	Conv  *conv.Conversation // history source: C_t = everything up to and including u_t
	Turn  int                // t, the round of the reply (>= 2)
	Reply string             // the assistant reply to review (a_t, or a generated one)
	// Origin is OriginDataset, or the respond variant that generated
	// Reply. It is recorded, never shown to the annotator: the review is
	// blind to the strategy.
	Origin string
}

// DatasetInput returns the Input for the dataset's own a_t, and false when
// u_t got no assistant reply.
func DatasetInput(c *conv.Conversation, t int) (Input, bool) {
	turns := c.Turns()
	if t < 1 || t > len(turns) || turns[t-1].Reply < 0 {
		return Input{}, false
	}
	return Input{Conv: c, Turn: t, Reply: c.Messages[turns[t-1].Reply].Content, Origin: OriginDataset}, true
}

// wire is the JSON answer; its struct tags are the one declaration of its
// fields (prompt example, tag parser, strict schema).
type wire struct {
	Present       *bool    `json:"present" parse:"required" hint:"true or false"`
	Category      string   `json:"category" parse:"enum=intent_override|code_carryover|factual_hallucination_carryover|reasoning_trace_carryover|formula_carryover|" hint:"\"one of the kinds above, or empty when absent\""`
	Sources       []string `json:"sources" hint:"[\"1a\"]"`
	Confidence    *float64 `json:"confidence" parse:"required" hint:"0.0 to 1.0"`
	Justification string   `json:"justification" hint:"\"one or two short sentences\""`
}

// ask is the pollution call: the reply of an Input after C_t as a tagged
// transcript (u_t tagged "0u", the reply "now"), each clipped to
// a.MaxChars, and a Label read from the answer.
var ask = annotator.Ask[Input, wire, Label]{
	Stage:  StageName,
	Doing:  "reviewing reply",
	Tokens: answerTokens,
	Render: func(a *annotator.LLM, in Input) ([]conv.Message, parse.Tagger, error) {
		reply := annotator.Entry{Tag: "now", Role: "assistant", Turn: in.Turn, Content: annotator.Clip(in.Reply, a.MaxChars)}
		return annotator.RenderHistory[wire](a, StageName, in.Conv, in.Turn, "0u", reply)
	},
	Check: func(in Input) func(wire) (Label, error) { return check(in.Turn) },
}

// checkSource accepts "ka" with 1 <= k < t: an earlier assistant reply.
// Pollution is the assistant's own output leaking forward, so a user
// message is never its source; naming one means the answer misread the
// task, and it is asked again.
func checkSource(s string, t int) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) < 2 || s[len(s)-1] != 'a' {
		if strings.HasSuffix(s, "u") {
			return "", fmt.Errorf("source %q is a user message; sources are earlier assistant replies, e.g. 1a", s)
		}
		return "", fmt.Errorf("source %q: want a distance and a, e.g. 1a", s)
	}
	k, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || k < 1 || k > t-1 {
		return "", fmt.Errorf("source %q: not an earlier assistant reply of round %d", s, t)
	}
	return s, nil
}

// check validates the model's answer for round t; the annotator name is set
// when the unit is encoded.
func check(t int) func(wire) (Label, error) {
	return func(w wire) (Label, error) {
		if *w.Confidence < 0 || *w.Confidence > 1 {
			return Label{}, fmt.Errorf("confidence %v is outside 0..1", *w.Confidence)
		}
		l := Label{Present: *w.Present, Confidence: *w.Confidence, Justification: annotator.OneLine(w.Justification), Sources: []string{}}
		if !l.Present {
			return l, nil // a category or sources given with "absent" mean nothing
		}
		if w.Category == "" {
			return Label{}, errors.New("present without a category")
		}
		if len(w.Sources) == 0 {
			// Carryover needs something carried: without a source the
			// label cannot be checked, and is asked again.
			return Label{}, errors.New("present without a source reply")
		}
		l.Category = w.Category
		seen := map[string]bool{}
		for _, s := range w.Sources {
			src, err := checkSource(s, t)
			if err != nil {
				return Label{}, err
			}
			if !seen[src] {
				seen[src] = true
				l.Sources = append(l.Sources, src)
			}
		}
		return l, nil
	}
}

// LLM is the model-backed annotator. Set Client; Role, Retries and MaxChars
// (the per-message clip) default as annotator.LLM says.
type LLM annotator.LLM

// core returns a's settings with defaults filled and the prompt loaded.
func (a *LLM) core() *annotator.LLM { return (*annotator.LLM)(a).Prepare(Prompt) }

// Version is the variant version: prompt version and settings.
func (a *LLM) Version() string { return a.core().Version() }

// Messages returns the rendered prompt for in.
func (a *LLM) Messages(in Input) ([]conv.Message, error) { return ask.Messages(a.core(), in) }

// Annotate reviews one reply and returns its unit (Turn = in.Turn). A
// malformed answer after retries or a rejected request gives a failed unit
// with the raw text; budget, fatal endpoint and context errors are returned.
func (a *LLM) Annotate(ctx context.Context, in Input) (pipeline.Unit, error) {
	u, _, err := review(ctx, a.core(), in, 0)
	return u, err
}

// review is Annotate with a prepared a, for work `ac3 retry` re-queued
// retry times; it also returns the label of a done unit (with Annotator
// set), so a stage that stores several labels in one unit need not decode
// what it just encoded.
func review(ctx context.Context, a *annotator.LLM, in Input, retry int) (pipeline.Unit, Label, error) {
	var got Label
	u, err := ask.Unit(ctx, a, in, in.Turn, retry, func(l Label, name string) ([]byte, error) {
		l.Annotator = name
		got = l
		return l.Encode()
	})
	if err != nil {
		return pipeline.Unit{}, Label{}, err
	}
	return u, got, nil
}

// DefaultFrom is the first round reviewed: round 1 has nothing to carry over.
const DefaultFrom = 2

// VariantDataset is the variant that reviews the dataset's own replies.
const VariantDataset = "llm"

// Options say which replies the stage reviews. Dataset, Responses or both
// may be set; each is its own variant, so each is recorded and resumed on
// its own.
type Options struct {
	// Dataset reviews the conversation's own assistant turns (variant
	// VariantDataset).
	Dataset bool
	// Responses reviews the replies the respond stage generated; nil
	// reviews none. See ResponseOptions.
	Responses *ResponseOptions
}

// Stage reviews assistant replies from round 2 on: the dataset's own, the
// generated ones, or both.
type Stage struct {
	llm       *annotator.LLM // prepared
	opts      Options
	variants  []pipeline.Variant
	responses map[string]string // variant name → respond variant
}

// NewStage returns the stage that reviews the dataset's own replies.
func NewStage(a *LLM) (*Stage, error) { return New(a, Options{Dataset: true}) }

// New returns the stage with opts. It fails without a model client, when
// it is given nothing to review, and when a respond variant to review has
// no version in ResponseOptions.RespondVersions (respond has not planned
// it in this run).
func New(a *LLM, opts Options) (*Stage, error) {
	if a == nil || a.Client == nil {
		return nil, errors.New("creating pollution stage: it needs a model client")
	}
	if err := annotator.CheckPrompt((*annotator.LLM)(a), "pollution"); err != nil {
		return nil, fmt.Errorf("creating pollution stage: %w", err)
	}
	s := &Stage{llm: a.core(), opts: opts, responses: map[string]string{}}
	if opts.Dataset {
		s.variants = append(s.variants, pipeline.Variant{Name: VariantDataset, Version: s.llm.Version() + ";on=" + OriginDataset})
	}
	if opts.Responses != nil {
		r := *opts.Responses // the caller's struct may change after New
		s.opts.Responses = &r
		vs, err := r.variants(s.llm.Version())
		if err != nil {
			return nil, fmt.Errorf("creating pollution stage: %w", err)
		}
		for _, v := range vs {
			s.responses[v.Name] = strings.TrimPrefix(v.Name, responsesPrefix)
		}
		s.variants = append(s.variants, vs...)
	}
	if len(s.variants) == 0 {
		return nil, errors.New("creating pollution stage: nothing to review (neither the dataset's replies nor generated ones)")
	}
	return s, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Prompts returns the prompt the stage renders, for the run to say which
// one is in use.
func (s *Stage) Prompts() []*prompt.Template { return s.llm.Prompts() }

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant { return s.variants }

// Turns returns the rounds of c whose dataset reply is reviewed (for dry
// runs).
func Turns(c *conv.Conversation) []int {
	var out []int
	for _, tr := range c.Turns() {
		if tr.Index >= DefaultFrom && tr.Reply >= 0 {
			out = append(out, tr.Index)
		}
	}
	return out
}

// ModelWindow implements pipeline.ModelStage: the window of the
// annotator's endpoint.
func (s *Stage) ModelWindow() int { return s.llm.Window() }

// Reviews returns the replies of c the stage would send for review, for
// dry runs and cost estimates: the dataset's replies when Dataset is set,
// then each generated variant's samples. It reads respond's units but calls
// no model.
func (s *Stage) Reviews(ctx context.Context, c *conv.Conversation) ([]Input, error) {
	var out []Input
	if s.opts.Dataset {
		for _, t := range Turns(c) {
			in, _ := DatasetInput(c, t)
			out = append(out, in)
		}
	}
	if s.opts.Responses == nil {
		return out, nil
	}
	byRespond, err := s.generated(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, rv := range s.opts.Responses.strategies() {
		for _, g := range byRespond[rv] {
			for _, in := range g.inputs {
				if in.Reply != "" {
					out = append(out, in)
				}
			}
		}
	}
	return out, nil
}

// call is one review the task makes: the reply of in, for unit unit of
// result result and, for generated replies, the sample slot it fills.
type call struct {
	result, unit, slot int // slot < 0: the unit is the review itself
	in                 Input
}

// Process implements pipeline.Stage. Each reply is reviewed against the
// conversation alone, never against another reply's label, so every review
// of a conversation, across variants, runs concurrently (Task.Each) within
// the engine's model window. A generated reply that cannot be reviewed (its
// respond unit is missing, failed or stale) gives a failed unit saying why,
// with no model call; errors that would fail every unit (budget, fatal
// endpoint, cancellation) are returned and leave the task pending.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	results := make([]pipeline.Result, len(t.Variants))
	gens := make([][]*genUnit, len(t.Variants)) // generated units per result
	var calls []call
	var byRespond map[string][]*genUnit
	for ri, v := range t.Variants {
		results[ri].Variant = v
		switch rv, gen := s.responses[v.Name]; {
		case v.Name == VariantDataset && s.opts.Dataset:
			turns := Turns(t.Conv)
			results[ri].Units = make([]pipeline.Unit, len(turns))
			for i, turn := range turns {
				in, _ := DatasetInput(t.Conv, turn)
				calls = append(calls, call{result: ri, unit: i, slot: -1, in: in})
			}
		case gen:
			if byRespond == nil {
				var err error
				if byRespond, err = s.generated(ctx, t.Conv); err != nil {
					return nil, err
				}
			}
			gens[ri] = byRespond[rv]
			for ui, g := range gens[ri] {
				for slot, in := range g.inputs {
					if in.Reply != "" {
						calls = append(calls, call{result: ri, unit: ui, slot: slot, in: in})
					}
				}
			}
		default:
			return nil, fmt.Errorf("reviewing %s: no variant %q", t.Conv.ID, v.Name)
		}
	}
	labels := make([]Label, len(calls))
	got, err := annotator.ModelUnits(ctx, t, len(calls), 0, func(ctx context.Context, i int) (pipeline.Unit, error) {
		u, l, err := review(ctx, s.llm, calls[i].in, t.Retry)
		labels[i] = l
		return u, err
	})
	if err != nil {
		return nil, err
	}
	for i, c := range calls {
		if c.slot < 0 {
			results[c.result].Units[c.unit] = got[i]
		} else {
			gens[c.result][c.unit].fill(c.slot, got[i], labels[i])
		}
	}
	for ri, gs := range gens {
		for _, g := range gs {
			u, err := g.unit()
			if err != nil {
				return nil, fmt.Errorf("reviewing %s: %w", t.Conv.ID, err)
			}
			results[ri].Units = append(results[ri].Units, u)
		}
	}
	return results, nil
}
