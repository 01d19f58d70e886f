package constraints

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

//go:embed prompts/constraints.tmpl
var promptText []byte

// Prompt returns the parsed constraints prompt.
func Prompt() *prompt.Template { return prompt.MustParse("constraints", promptText) }

// Defaults for the LLM annotator.
const (
	DefaultRole     = "annotator"
	DefaultRetries  = 2
	DefaultMaxChars = 6000
)

type wireConstraint struct {
	Text     string `json:"text" parse:"required"`
	Evidence string `json:"evidence" parse:"required"`
	Type     string `json:"type" parse:"required,enum=action|information|process|preference|output"`
}

type wire struct {
	Constraints []wireConstraint `json:"constraints" parse:"required"`
}

type promptData struct {
	Nonce         string
	Turn          int
	User          string
	PrevAssistant string
	Registry      []Constraint
}

// render builds the prompt from in alone, so the prompt cannot hold text the
// Input does not.
func render(tmpl *prompt.Template, in Input, maxChars int) ([]conv.Message, parse.Tagger, error) {
	d := promptData{Turn: in.turn, User: clip(in.user, maxChars), PrevAssistant: clip(in.prevAssistant, maxChars), Registry: in.registry}
	parts := []string{d.User, d.PrevAssistant}
	for _, c := range d.Registry {
		parts = append(parts, c.Text)
	}
	tg := parse.NewTagger(parts...)
	d.Nonce = tg.Nonce()
	msgs, err := tmpl.Render(d)
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

// parser reads the tagged answer and checks each constraint: a known type,
// non-empty text, and evidence actually found in u_t.
func parser(tg parse.Tagger, user string) func(llm.Response) ([]Constraint, error) {
	return func(r llm.Response) ([]Constraint, error) {
		sec, err := tg.Parse(r.Text, []string{"answer"})
		if err != nil {
			return nil, err
		}
		var w wire
		if err := parse.JSON(sec["answer"], &w); err != nil {
			return nil, err
		}
		out := make([]Constraint, 0, len(w.Constraints))
		for i, c := range w.Constraints {
			text := strings.Join(strings.Fields(c.Text), " ")
			if text == "" {
				return nil, fmt.Errorf("constraints[%d]: empty text", i)
			}
			if !quoted(c.Evidence, user) {
				return nil, fmt.Errorf("constraints[%d]: evidence %q is not in the user message", i, clip(c.Evidence, 80))
			}
			out = append(out, Constraint{Text: text, Evidence: strings.TrimSpace(c.Evidence), Type: c.Type})
		}
		return out, nil
	}
}

// LLM is the model-backed extractor.
type LLM struct {
	Client   *llm.Client
	Role     string // default DefaultRole
	Retries  int    // fresh draws after a malformed answer; default DefaultRetries
	MaxChars int    // clip for u_t and a_{t-1}; default DefaultMaxChars

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

// Version is the variant version: the prompt's version and every setting
// that changes answers.
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

// Extract asks the model for the constraints of in and merges them into the
// registry. It returns the unit for turn in.Turn() and the registry as of
// that turn. A malformed answer after retries or a rejected request gives a
// failed unit and the registry unchanged; budget, fatal endpoint and context
// errors are returned.
func (a *LLM) Extract(ctx context.Context, in Input) (pipeline.Unit, []Constraint, error) {
	a.defaults()
	msgs, tg, err := render(a.tmpl, in, a.MaxChars)
	if err != nil {
		return pipeline.Unit{}, nil, err
	}
	req := llm.Request{Role: a.Role, Stage: StageName, Messages: msgs, CompletionEstimate: 120}
	found, resp, err := llm.CallParsed(ctx, a.Client, req, a.Retries, parser(tg, in.user))
	if err != nil {
		if u, ok := failedUnit(in.turn, err); ok {
			return u, in.Registry(), nil
		}
		return pipeline.Unit{}, nil, fmt.Errorf("reading turn %d: %w", in.turn, err)
	}
	added, reg := merge(in.registry, found, in.turn)
	model := resp.Model
	if model == "" {
		model = "unknown"
	}
	b, err := Record{New: added, Registry: reg, Annotator: "llm:" + model}.Encode()
	if err != nil {
		return pipeline.Unit{}, nil, err
	}
	return pipeline.Unit{Turn: in.turn, Attempts: 1, Output: b, Tokens: int64(resp.Usage.Total())}, reg, nil
}

func failedUnit(turn int, err error) (pipeline.Unit, bool) {
	var pe *llm.ParseError
	if errors.As(err, &pe) {
		return pipeline.Unit{Turn: turn, Failed: true, Attempts: pe.Attempts, Error: err.Error(), Raw: pe.Raw}, true
	}
	var ce *llm.CallError
	if errors.As(err, &ce) && !llm.IsFatal(err) {
		return pipeline.Unit{Turn: turn, Failed: true, Attempts: 1, Error: err.Error(), Raw: ce.Raw}, true
	}
	return pipeline.Unit{}, false
}
