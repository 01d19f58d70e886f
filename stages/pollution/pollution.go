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
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
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

// Field describes one exported column.
type Field struct {
	Name, Type, Doc string
}

// Fields describes the columns of an export of pollution units beside
// conversation_id, turn (t of the assistant turn a_t) and variant.
func Fields() []Field {
	return []Field{
		{"present", "bool", "the reply carries over an earlier mistake"},
		{"category", "string", strings.Join(Categories(), " | ") + ` | "" when absent`},
		{"sources", "list<string>", `earlier turns the mistake comes from: "1a" = a_{t-1}, "2u" = u_{t-2}`},
		{"confidence", "float64", "the annotator's confidence, 0..1"},
		{"justification", "string", "one or two sentences"},
		{"annotator", "string", `"llm:<model>"`},
	}
}

//go:embed prompts/pollution.tmpl
var promptText []byte

// Prompt returns the parsed pollution prompt.
func Prompt() *prompt.Template { return prompt.MustParse("pollution", promptText) }

// Defaults for the annotator.
const (
	DefaultRole     = "annotator"
	DefaultRetries  = 2
	DefaultMaxChars = 6000
	// OriginDataset marks replies taken from the conversation itself.
	OriginDataset = "dataset"
)

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

type entry struct {
	Tag, Role string
	Turn      int
	Content   string
}

type promptData struct {
	Nonce    string
	Turn     int
	Messages []entry
}

func render(tmpl *prompt.Template, in Input, maxChars int) ([]conv.Message, parse.Tagger, error) {
	c := in.Conv
	turns := c.Turns()
	if in.Turn < 1 || in.Turn > len(turns) {
		return nil, parse.Tagger{}, fmt.Errorf("rendering pollution prompt: conversation %s has no turn %d", c.ID, in.Turn)
	}
	var es []entry
	if c.System != "" {
		es = append(es, entry{Tag: "system", Role: "system message", Content: clip(c.System, maxChars)})
	}
	for _, tr := range turns[:in.Turn] {
		d := in.Turn - tr.Index
		end := tr.End
		if d == 0 {
			end = tr.User + 1 // C_t stops at u_t; the reply comes from the Input
		}
		for i := tr.User; i < end; i++ {
			m := c.Messages[i]
			e := entry{Role: string(m.Role), Turn: tr.Index, Content: clip(m.Content, maxChars)}
			switch {
			case i == tr.User && d == 0:
				e.Tag = "0u"
			case i == tr.User:
				e.Tag = strconv.Itoa(d) + "u"
			case m.Role == conv.Assistant:
				e.Tag = strconv.Itoa(d) + "a"
			default:
				e.Tag = string(m.Role)
			}
			es = append(es, e)
		}
	}
	es = append(es, entry{Tag: "now", Role: "assistant", Turn: in.Turn, Content: clip(in.Reply, maxChars)})
	parts := make([]string, 0, len(es))
	for _, e := range es {
		parts = append(parts, e.Content)
	}
	tg := parse.NewTagger(parts...)
	msgs, err := tmpl.Render(promptData{Nonce: tg.Nonce(), Turn: in.Turn, Messages: es})
	return msgs, tg, err
}

func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	head, start := n*2/3, len(s)-n/3
	for head > 0 && s[head]&0xC0 == 0x80 {
		head--
	}
	for start < len(s) && s[start]&0xC0 == 0x80 {
		start++
	}
	return s[:head] + fmt.Sprintf("\n[… %d characters left out …]\n", start-head) + s[start:]
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

func parser(tg parse.Tagger, t int) func(llm.Response) (Label, error) {
	return func(r llm.Response) (Label, error) {
		sec, err := tg.Parse(r.Text, []string{"answer"})
		if err != nil {
			return Label{}, err
		}
		var w wire
		if err := parse.JSON(sec["answer"], &w); err != nil {
			return Label{}, err
		}
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

// LLM is the model-backed annotator.
type LLM struct {
	Client   *llm.Client
	Role     string // default DefaultRole
	Retries  int    // default DefaultRetries
	MaxChars int    // per-message clip; default DefaultMaxChars

	tmpl *prompt.Template
}

func (a *LLM) defaults() {
	if a.Role == "" {
		a.Role = DefaultRole
	}
	if a.Retries == 0 {
		a.Retries = DefaultRetries
	}
	if a.MaxChars == 0 {
		a.MaxChars = DefaultMaxChars
	}
	if a.tmpl == nil {
		a.tmpl = Prompt()
	}
}

// Version is the variant version: prompt version and settings.
func (a *LLM) Version() string {
	a.defaults()
	model := ""
	if a.Client != nil {
		if ep, err := a.Client.Endpoint(a.Role); err == nil {
			model = ep.Model
		}
	}
	return fmt.Sprintf("%s;role=%s;model=%s;retries=%d;clip=%d", a.tmpl.Version(), a.Role, model, a.Retries, a.MaxChars)
}

// Messages returns the rendered prompt for in.
func (a *LLM) Messages(in Input) ([]conv.Message, error) {
	a.defaults()
	msgs, _, err := render(a.tmpl, in, a.MaxChars)
	return msgs, err
}

// Annotate reviews one reply and returns its unit (Turn = in.Turn). A
// malformed answer after retries or a rejected request gives a failed unit
// with the raw text; budget, fatal endpoint and context errors are returned.
func (a *LLM) Annotate(ctx context.Context, in Input) (pipeline.Unit, error) {
	a.defaults()
	msgs, tg, err := render(a.tmpl, in, a.MaxChars)
	if err != nil {
		return pipeline.Unit{}, err
	}
	req := llm.Request{Role: a.Role, Stage: StageName, Messages: msgs, CompletionEstimate: 160}
	lab, resp, err := llm.CallParsed(ctx, a.Client, req, a.Retries, parser(tg, in.Turn))
	if err != nil {
		var pe *llm.ParseError
		var ce *llm.CallError
		switch {
		case errors.As(err, &pe):
			return pipeline.Unit{Turn: in.Turn, Failed: true, Attempts: pe.Attempts, Error: err.Error(), Raw: pe.Raw}, nil
		case errors.As(err, &ce) && !llm.IsFatal(err):
			return pipeline.Unit{Turn: in.Turn, Failed: true, Attempts: 1, Error: err.Error(), Raw: ce.Raw}, nil
		}
		return pipeline.Unit{}, fmt.Errorf("reviewing reply %d: %w", in.Turn, err)
	}
	model := resp.Model
	if model == "" {
		model = "unknown"
	}
	lab.Annotator = "llm:" + model
	b, err := lab.Encode()
	if err != nil {
		return pipeline.Unit{}, err
	}
	return pipeline.Unit{Turn: in.Turn, Attempts: 1, Output: b, Tokens: int64(resp.Usage.Total())}, nil
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
	a.defaults()
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
			u, err := s.llm.Annotate(ctx, in)
			if err != nil {
				return nil, err
			}
			units = append(units, u)
		}
		out = append(out, pipeline.Result{Variant: v, Units: units})
	}
	return out, nil
}
