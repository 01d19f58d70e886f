package annotator

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

// Defaults for settings left at zero.
const (
	DefaultRole     = "annotator"
	DefaultRetries  = 2
	DefaultMaxChars = 6000
)

// LLM is the configuration of a model-backed annotator. A stage declares its
// annotator as a type with this layout (type LLM annotator.LLM), so callers
// set the same fields everywhere and the stage adds its own methods.
type LLM struct {
	Client   *llm.Client
	Role     string // model role; default DefaultRole
	Retries  int    // fresh draws after a malformed answer; default DefaultRetries
	MaxChars int    // clip for each text put in the prompt; default DefaultMaxChars
	// Output is how the model is asked for answers; default the role's
	// (llm.Client.Output).
	Output parse.Output
	// Template replaces the stage's shipped prompt: a user's template,
	// parsed and checked against the stage's declaration (prompt.ParseFile
	// with the stage's PromptSpec). nil keeps the shipped one. Its version
	// goes into the variant's, so another prompt never reuses units or
	// answers.
	Template *prompt.Template

	tmpl *prompt.Template
}

// Prepare sets the settings left at zero to their defaults and, on first
// use, loads the stage's prompt. It returns a. Call it once before a is
// shared between goroutines (the stages' NewStage do): after that it only
// reads.
func (a *LLM) Prepare(load func() *prompt.Template) *LLM {
	if a.Role == "" {
		a.Role = DefaultRole
	}
	if a.Retries == 0 {
		a.Retries = DefaultRetries
	}
	if a.MaxChars == 0 {
		a.MaxChars = DefaultMaxChars
	}
	if a.Output == "" {
		a.Output = a.Client.Output(a.Role)
	}
	if a.tmpl == nil {
		a.tmpl = a.Template
		if a.tmpl == nil {
			a.tmpl = load()
		}
	}
	return a
}

// CheckPrompt refuses a replacement prompt made for another prompt than
// name (a's stage's): its fields would not be the ones rendered. A nil a or
// a nil a.Template passes.
func CheckPrompt(a *LLM, name string) error {
	if a == nil || a.Template == nil || a.Template.Name() == name {
		return nil
	}
	return fmt.Errorf("the %s stage was given a template for the %s prompt (%s)", name, a.Template.Name(), a.Template.File())
}

// AnswerForm is the form of an annotation stage's answer: one JSON object,
// a W (whose struct tags declare its fields once), inside the nonce-tagged
// "answer" section with tags output, or the whole answer under W's strict
// schema, named for the stage, with json_schema output.
func AnswerForm[W any](stage string) parse.Object[W] {
	return parse.Object[W]{Name: stage, Section: "answer"}
}

// Prompt returns the prompt Prepare loaded.
func (a *LLM) Prompt() *prompt.Template { return a.tmpl }

// Version is the variant version: the prompt's version and every setting
// that changes answers. It goes into unit keys, so its form must not change.
// a must be prepared.
func (a *LLM) Version() string {
	model := ""
	if a.Client != nil {
		if ep, err := a.Client.Endpoint(a.Role); err == nil {
			model = ep.Model
		}
	}
	v := fmt.Sprintf("%s;role=%s;model=%s;retries=%d;clip=%d", a.tmpl.Version(), a.Role, model, a.Retries, a.MaxChars)
	if a.Output != parse.Tags && a.Output != "" {
		v += ";output=" + string(a.Output)
	}
	return v
}

// Query is one unit's model call.
type Query struct {
	Stage              string         // stage name recorded with the call
	Turn               int            // the unit's turn
	Messages           []conv.Message // the rendered prompt
	Tagger             parse.Tagger   // the tagger whose nonce the answer section carries
	CompletionEstimate int            // expected answer tokens, for the budget
	Retry              int            // pipeline.Task.Retry: how often `ac3 retry` re-queued this work
}

// Unit asks the model for one unit with a's settings. The answer must hold
// one JSON object, a W, laid out as AnswerForm says for a.Output: inside an
// "answer" section tagged with q.Tagger's nonce, or as the whole answer
// under W's strict schema, which the request then carries; check validates
// it into a T. A rejected answer is asked again, as a
// fresh draw, up to a.Retries times; q.Retry moves all draws past those of
// earlier runs, so a retried unit does not replay cached bad answers.
// encode makes the stored output from the T and the annotator name
// ("llm:<model>").
//
// A malformed answer after retries or a request the endpoint rejected gives
// a failed unit holding the raw text, and a nil error. Budget, fatal
// endpoint and context errors are returned, as are encode's.
func Unit[W, T any](ctx context.Context, a *LLM, q Query, check func(W) (T, error), encode func(v T, annotator string) ([]byte, error)) (pipeline.Unit, error) {
	req := llm.Request{Role: a.Role, Stage: q.Stage, Messages: q.Messages, CompletionEstimate: q.CompletionEstimate, Reroll: q.Retry * (a.Retries + 1)}
	form := AnswerForm[W](q.Stage)
	if a.Output == parse.JSONSchema {
		req.Schema = &llm.Schema{Name: form.Name, Schema: form.Schema()}
	}
	v, resp, err := llm.CallParsed(ctx, a.Client, req, a.Retries, func(r llm.Response) (T, error) {
		w, err := form.Parse(a.Output, q.Tagger, r.Text)
		if err != nil {
			var zero T
			return zero, err
		}
		return check(w)
	})
	if err != nil {
		if u, ok := FailedUnit(q.Turn, err); ok {
			return u, nil
		}
		return pipeline.Unit{}, err
	}
	model := resp.Model
	if model == "" {
		model = "unknown"
	}
	out, err := encode(v, "llm:"+model)
	if err != nil {
		return pipeline.Unit{}, err
	}
	return pipeline.Unit{Turn: q.Turn, Attempts: 1, Output: out, Tokens: int64(resp.Usage.Total())}, nil
}

// FailedUnit turns an error that concerns only this unit (a malformed answer
// after retries, a request the endpoint rejected) into a failed unit with
// the raw answer kept. It reports false for errors that must stop the run.
func FailedUnit(turn int, err error) (pipeline.Unit, bool) {
	raw, ok := llm.UnitFailure(err)
	if !ok {
		return pipeline.Unit{}, false
	}
	attempts := 1
	var pe *llm.ParseError
	if errors.As(err, &pe) {
		attempts = pe.Attempts
	}
	return pipeline.Unit{Turn: turn, Failed: true, Attempts: attempts, Error: err.Error(), Raw: raw}, true
}
