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

// Decode reads a stored pollution unit output.
func Decode(b []byte) (Label, error) {
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

// OriginDataset marks replies taken from the conversation itself.
const OriginDataset = "dataset"

// Input is one reply to review: the history before it and the reply.
type Input struct {
	Conv   *conv.Conversation // history source: C_t = everything up to and including u_t
	Turn   int                // t, the round of the reply (>= 2)
	Reply  string             // the assistant reply to review (a_t, or a generated one)
	Origin string             // OriginDataset, or the name of what generated Reply
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

type wire struct {
	Present       *bool    `json:"present" parse:"required"`
	Category      string   `json:"category" parse:"enum=intent_override|code_carryover|factual_hallucination_carryover|reasoning_trace_carryover|formula_carryover|"`
	Sources       []string `json:"sources"`
	Confidence    *float64 `json:"confidence" parse:"required"`
	Justification string   `json:"justification"`
}

// render builds the prompt for the reply of in: C_t as a tagged transcript
// (u_t tagged "0u") followed by the reply, tagged "now", each clipped to
// a.MaxChars. It returns the messages and the tagger whose nonce the answer
// must carry.
func render(a *annotator.LLM, in Input) ([]conv.Message, parse.Tagger, error) {
	es, err := annotator.History(in.Conv, in.Turn, a.MaxChars, "0u")
	if err != nil {
		return nil, parse.Tagger{}, fmt.Errorf("rendering pollution prompt: %w", err)
	}
	es = append(es, annotator.Entry{Tag: "now", Role: "assistant", Turn: in.Turn, Content: annotator.Clip(in.Reply, a.MaxChars)})
	return annotator.RenderTranscript(a.Prompt(), in.Turn, es)
}

// checkSource accepts "ka" or "ku" with 1 <= k < t, and "0u" (u_t itself,
// for an intent the reply overrides).
func checkSource(s string, t int) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) < 2 || (s[len(s)-1] != 'a' && s[len(s)-1] != 'u') {
		return "", fmt.Errorf("source %q: want a distance and u or a, e.g. 1a", s)
	}
	k, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || k < 0 || k > t-1 || (k == 0 && s[len(s)-1] == 'a') {
		return "", fmt.Errorf("source %q: not an earlier message of round %d", s, t)
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
		l := Label{Present: *w.Present, Confidence: *w.Confidence, Justification: strings.Join(strings.Fields(w.Justification), " "), Sources: []string{}}
		if !l.Present {
			return l, nil // a category or sources given with "absent" mean nothing
		}
		if w.Category == "" {
			return Label{}, errors.New("present without a category")
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
func (a *LLM) Messages(in Input) ([]conv.Message, error) {
	msgs, _, err := render(a.core(), in)
	return msgs, err
}

// Annotate reviews one reply and returns its unit (Turn = in.Turn). A
// malformed answer after retries or a rejected request gives a failed unit
// with the raw text; budget, fatal endpoint and context errors are returned.
func (a *LLM) Annotate(ctx context.Context, in Input) (pipeline.Unit, error) {
	return a.annotate(ctx, in, 0)
}

// annotate is Annotate for work `ac3 retry` re-queued retry times.
func (a *LLM) annotate(ctx context.Context, in Input, retry int) (pipeline.Unit, error) {
	core := a.core()
	msgs, tg, err := render(core, in)
	if err != nil {
		return pipeline.Unit{}, err
	}
	q := annotator.Query{Stage: StageName, Turn: in.Turn, Messages: msgs, Tagger: tg, CompletionEstimate: 160, Retry: retry}
	u, err := annotator.Unit(ctx, core, q, check(in.Turn), func(l Label, name string) ([]byte, error) {
		l.Annotator = name
		return l.Encode()
	})
	if err != nil {
		return pipeline.Unit{}, fmt.Errorf("reviewing reply %d: %w", in.Turn, err)
	}
	return u, nil
}

// DefaultFrom is the first round reviewed: round 1 has nothing to carry over.
const DefaultFrom = 2

// Stage reviews the dataset's own assistant turns from round 2 on.
type Stage struct {
	llm *LLM
}

// NewStage returns the stage.
func NewStage(a *LLM) (*Stage, error) {
	if a == nil || a.Client == nil {
		return nil, errors.New("creating pollution stage: it needs a model client")
	}
	a.core()
	return &Stage{llm: a}, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant {
	return []pipeline.Variant{{Name: "llm", Version: s.llm.Version() + ";on=" + OriginDataset}}
}

// Turns returns the rounds reviewed in c (for dry runs).
func Turns(c *conv.Conversation) []int {
	var out []int
	for _, tr := range c.Turns() {
		if tr.Index >= DefaultFrom && tr.Reply >= 0 {
			out = append(out, tr.Index)
		}
	}
	return out
}

// Process implements pipeline.Stage.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	out := make([]pipeline.Result, 0, len(t.Variants))
	for _, v := range t.Variants {
		if v.Name != "llm" {
			return nil, fmt.Errorf("reviewing %s: no annotator %q", t.Conv.ID, v.Name)
		}
		var units []pipeline.Unit
		for _, turn := range Turns(t.Conv) {
			in, _ := DatasetInput(t.Conv, turn)
			u, err := s.llm.annotate(ctx, in, t.Retry)
			if err != nil {
				return nil, err
			}
			units = append(units, u)
		}
		out = append(out, pipeline.Result{Variant: v, Units: units})
	}
	return out, nil
}
