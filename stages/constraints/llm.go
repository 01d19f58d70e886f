package constraints

import (
	"context"
	_ "embed"
	"fmt"
	"reflect"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/annotator"
)

//go:embed prompts/constraints.tmpl
var promptText []byte

// Prompt returns the parsed constraints prompt.
func Prompt() *prompt.Template { return prompt.MustParse("constraints", promptText) }

// PromptSpec declares the constraints prompt for a user's template that
// replaces it (LLM.Template; stages.constraints.prompts.constraints in the
// config): it is rendered with the turn's user message (.User, which it
// must show), the assistant message before it (.PrevAssistant), the
// registry so far (.Registry), .Turn and .Nonce; the answer's form is
// ac3's.
func PromptSpec() prompt.Spec {
	return prompt.Spec{Name: "constraints", Data: reflect.TypeFor[promptData](), Needs: []string{"User"}, Contract: []string{"Answer", "JSON"}}
}

type wireConstraint struct {
	Text     string `json:"text" parse:"required"`
	Evidence string `json:"evidence" parse:"required"`
	Type     string `json:"type" parse:"required,enum=action|information|process|preference|output"`
}

// wire is the JSON answer; its struct tags (and wireConstraint's) are the
// one declaration of its fields (prompt example, tag parser, strict schema).
type wire struct {
	Constraints []wireConstraint `json:"constraints" parse:"required"`
}

type promptData struct {
	Nonce         string
	Turn          int
	User          string
	PrevAssistant string
	Registry      []Constraint
	Answer        string // the answer's form, laid out for the output
	JSON          bool   // json_schema output
}

// render builds the prompt from in alone, so the prompt cannot hold text the
// Input does not.
func render(a *annotator.LLM, in Input) ([]conv.Message, parse.Tagger, error) {
	d := promptData{Turn: in.turn, Registry: in.registry}
	d.User, d.PrevAssistant = in.shown(a)
	parts := []string{d.User, d.PrevAssistant}
	for _, c := range d.Registry {
		parts = append(parts, c.Text)
	}
	return annotator.Render[wire](a, StageName, parts, func(nonce, answer string, json bool) any {
		d.Nonce, d.Answer, d.JSON = nonce, answer, json
		return d
	})
}

// shown returns u_t and a_{t-1} as a prompt shows them: clipped to
// a.MaxChars.
func (in Input) shown(a *annotator.LLM) (user, prevAssistant string) {
	return annotator.Clip(in.user, a.MaxChars), annotator.Clip(in.prevAssistant, a.MaxChars)
}

// check validates the model's answer: each constraint has a known type,
// non-empty text, and evidence actually found in u_t.
func check(user string) func(wire) ([]Constraint, error) {
	return func(w wire) ([]Constraint, error) {
		out := make([]Constraint, 0, len(w.Constraints))
		for i, c := range w.Constraints {
			text := annotator.OneLine(c.Text)
			if text == "" {
				return nil, fmt.Errorf("constraints[%d]: empty text", i)
			}
			if !quoted(c.Evidence, user) {
				return nil, fmt.Errorf("constraints[%d]: evidence %q is not in the user message", i, annotator.Clip(c.Evidence, 80))
			}
			out = append(out, Constraint{Text: text, Evidence: strings.TrimSpace(c.Evidence), Type: c.Type})
		}
		return out, nil
	}
}

// ask is the sequential form's call: the registry so far in the prompt,
// the constraints u_t sets in the answer.
var ask = annotator.Ask[Input, wire, []Constraint]{
	Stage:  StageName,
	Doing:  "reading turn",
	Tokens: answerTokens,
	Render: render,
	Check:  func(in Input) func(wire) ([]Constraint, error) { return check(in.user) },
}

// LLM is the model-backed extractor. Set Client; Role, Retries and MaxChars
// (the clip for u_t and a_{t-1}) default as annotator.LLM says.
type LLM annotator.LLM

// core returns a's settings with defaults filled and the prompt loaded.
func (a *LLM) core() *annotator.LLM { return (*annotator.LLM)(a).Prepare(Prompt) }

// Version is the variant version: the prompt's version and every setting
// that changes answers.
func (a *LLM) Version() string { return a.core().Version() }

// Messages returns the rendered prompt for in.
func (a *LLM) Messages(in Input) ([]conv.Message, error) { return ask.Messages(a.core(), in) }

// Extract asks the model for the constraints of in and merges them into the
// registry. It returns the unit for turn in.Turn() and the registry as of
// that turn. A malformed answer after retries or a rejected request gives a
// failed unit and the registry unchanged; budget, fatal endpoint and context
// errors are returned.
func (a *LLM) Extract(ctx context.Context, in Input) (pipeline.Unit, []Constraint, error) {
	return extract(ctx, a.core(), in, 0)
}

// extract is Extract with a prepared a, for work `ac3 retry` re-queued
// retry times.
func extract(ctx context.Context, a *annotator.LLM, in Input, retry int) (pipeline.Unit, []Constraint, error) {
	reg := in.Registry() // kept when the unit fails
	u, err := ask.Unit(ctx, a, in, in.turn, retry, func(found []Constraint, name string) ([]byte, error) {
		var added []Constraint
		added, reg = merge(in.registry, found, in.turn)
		return Record{New: added, Registry: reg, Annotator: name}.Encode()
	})
	if err != nil {
		return pipeline.Unit{}, nil, err
	}
	return u, reg, nil
}
