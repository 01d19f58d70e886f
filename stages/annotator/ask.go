package annotator

import (
	"context"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

// Ask is what one annotation stage asks the model about an input In: how it
// renders In and checks the answer, a W, into a T. The stage declares it
// once; rendering, the call, retries and failed units are the same for all.
type Ask[In, W, T any] struct {
	// Stage is the stage name recorded with every call; it also names the
	// answer's schema.
	Stage string
	// Doing says what a call was doing, before the turn, in the error of a
	// call that stops the run ("labelling turn").
	Doing string
	// Tokens is the answer length expected, for the budget and estimates.
	Tokens int
	// Render builds the prompt for in with a's settings and returns the
	// tagger whose nonce the answer must carry.
	Render func(a *LLM, in In) ([]conv.Message, parse.Tagger, error)
	// Check returns the check of an answer about in.
	Check func(in In) func(W) (T, error)
}

// Messages returns the prompt k renders for in (for dry runs, estimates and
// tests).
func (k Ask[In, W, T]) Messages(a *LLM, in In) ([]conv.Message, error) {
	msgs, _, err := k.Render(a, in)
	return msgs, err
}

// Unit asks the model about in, the unit of turn, as Unit does; retry is
// pipeline.Task.Retry. A rendering error is returned as is; an error of the
// call is said to be about the turn (k.Doing).
func (k Ask[In, W, T]) Unit(ctx context.Context, a *LLM, in In, turn, retry int, encode func(v T, annotator string) ([]byte, error)) (pipeline.Unit, error) {
	msgs, tg, err := k.Render(a, in)
	if err != nil {
		return pipeline.Unit{}, err
	}
	q := Query{Stage: k.Stage, Turn: turn, Messages: msgs, Tagger: tg, CompletionEstimate: k.Tokens, Retry: retry}
	u, err := Unit(ctx, a, q, k.Check(in), encode)
	if err != nil {
		return pipeline.Unit{}, fmt.Errorf("%s %d: %w", k.Doing, turn, err)
	}
	return u, nil
}

// Call is the forecast of the call Unit makes with msgs.
func (k Ask[In, W, T]) Call(a *LLM, f *pipeline.Forecast, msgs []conv.Message) pipeline.Call {
	return call(a, f, msgs, k.Tokens)
}

// Render renders a's prompt for an answer that is a W, in the form
// AnswerForm[W](stage) lays out for a.Output. parts are the texts the prompt
// embeds: the nonce is derived from them all, so none can carry it. data
// returns the stage's prompt data given the nonce, the answer's layout and
// whether the output is json_schema; the returned tagger reads the answer.
func Render[W any](a *LLM, stage string, parts []string, data func(nonce, answer string, json bool) any) ([]conv.Message, parse.Tagger, error) {
	return render(a.Prompt(), a.Output, AnswerForm[W](stage), parts, data)
}

func render(tmpl *prompt.Template, out parse.Output, form Layout, parts []string, data func(nonce, answer string, json bool) any) ([]conv.Message, parse.Tagger, error) {
	tg := parse.NewTagger(parts...)
	answer, json := form.Layout(out, tg), out == parse.JSONSchema
	msgs, err := tmpl.RenderAnswer(data(tg.Nonce(), answer, json), Contract(json, answer))
	return msgs, tg, err
}

// OneLine joins the words of s with single spaces: how a short answer field
// (a reason, a constraint) is stored, whatever line breaks the model wrote.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
