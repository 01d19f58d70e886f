package classify

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/annotator"
)

//go:embed prompts/classify.tmpl
var promptText []byte

// Prompt returns the parsed classify prompt.
func Prompt() *prompt.Template { return prompt.MustParse("classify", promptText) }

// PromptSpec declares the classify prompt for a user's template that
// replaces it (LLM.Template; stages.classify.prompts.classify in the config):
// it is rendered with an annotator.Transcript of C_t, u_t tagged "now", and
// must show .Messages; the answer's form is ac3's.
func PromptSpec() prompt.Spec { return annotator.TranscriptSpec("classify") }

// wire is the JSON the model writes inside its answer section.
// Its struct tags are the one declaration of the answer's fields: the
// prompt's example, the tag parser and the strict schema come from them.
type wire struct {
	Type       string   `json:"type" parse:"required,enum=new_ask|feedback|no_feedback"`
	Confidence *float64 `json:"confidence" parse:"required" hint:"0.0 to 1.0"`
	Reason     string   `json:"reason" hint:"\"one short line\""`
	Refs       []string `json:"refs" parse:"required" hint:"[\"1a\"]"`
}

// turnOf is one input of the classify call: u_t of a conversation.
type turnOf struct {
	c *conv.Conversation
	t int
}

// ask is the classify call: C_t as a tagged transcript, each message
// clipped to a.MaxChars, and a Label read from the answer.
var ask = annotator.Ask[turnOf, wire, Label]{
	Stage:  StageName,
	Doing:  "labelling turn",
	Tokens: answerTokens,
	Render: func(a *annotator.LLM, in turnOf) ([]conv.Message, parse.Tagger, error) {
		return annotator.RenderHistory[wire](a, StageName, in.c, in.t, "now")
	},
	Check: func(in turnOf) func(wire) (Label, error) { return check(in.t) },
}

// check validates the model's answer for turn t; the annotator name is set
// when the unit is encoded.
func check(t int) func(wire) (Label, error) {
	return func(w wire) (Label, error) {
		if *w.Confidence < 0 || *w.Confidence > 1 {
			return Label{}, fmt.Errorf("confidence %v is outside 0..1", *w.Confidence)
		}
		refs, err := checkRefs(w.Refs, t)
		if err != nil {
			return Label{}, err
		}
		return Label{Type: w.Type, Confidence: *w.Confidence, Reason: annotator.OneLine(w.Reason), Refs: refs}, nil
	}
}

// LLM is the model-backed annotator. Set Client; Role, Retries and MaxChars
// (the per-message clip) default as annotator.LLM says.
type LLM annotator.LLM

// core returns a's settings with defaults filled and the prompt loaded.
func (a *LLM) core() *annotator.LLM { return (*annotator.LLM)(a).Prepare(Prompt) }

// Version is the variant version: the prompt's version and every setting
// that changes answers.
func (a *LLM) Version() string { return a.core().Version() }

// Messages returns the rendered prompt for u_t of c (for tests, dry runs and
// inspection).
func (a *LLM) Messages(c *conv.Conversation, t int) ([]conv.Message, error) {
	return ask.Messages(a.core(), turnOf{c, t})
}

// Unit labels u_t of c with the model. A malformed answer (after retries) or
// a rejected request becomes a failed unit holding the raw text; budget,
// fatal endpoint and context errors are returned.
func (a *LLM) Unit(ctx context.Context, c *conv.Conversation, t int) (pipeline.Unit, error) {
	return unit(ctx, a.core(), c, t, 0)
}

// unit is Unit with a prepared a, for work `ac3 retry` re-queued retry
// times.
func unit(ctx context.Context, a *annotator.LLM, c *conv.Conversation, t, retry int) (pipeline.Unit, error) {
	return ask.Unit(ctx, a, turnOf{c, t}, t, retry, func(l Label, name string) ([]byte, error) {
		l.Annotator = name
		return l.Encode()
	})
}
