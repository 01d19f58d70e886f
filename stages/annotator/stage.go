package annotator

import (
	"context"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/prompt"
)

// VariantLLM is the variant of a stage's model-backed annotator.
const VariantLLM = "llm"

// Results makes one result per variant of t, in order, with the units
// units makes for it; the first error ends the task.
func Results(t pipeline.Task, units func(v pipeline.Variant) ([]pipeline.Unit, error)) ([]pipeline.Result, error) {
	out := make([]pipeline.Result, 0, len(t.Variants))
	for _, v := range t.Variants {
		us, err := units(v)
		if err != nil {
			return nil, err
		}
		out = append(out, pipeline.Result{Variant: v, Units: us})
	}
	return out, nil
}

// RuleUnits makes the units of turns from..to for an annotator that needs
// no model, in turn order; output returns a turn's stored output.
func RuleUnits(from, to int, output func(turn int) ([]byte, error)) ([]pipeline.Unit, error) {
	var units []pipeline.Unit
	for turn := from; turn <= to; turn++ {
		b, err := output(turn)
		if err != nil {
			return nil, err
		}
		units = append(units, pipeline.Unit{Turn: turn, Output: b})
	}
	return units, nil
}

// ModelUnits makes n units with the model through t.Each, at most limit at
// once (see pipeline.Task.Each: 1 keeps them in order, for units that
// depend on the one before); unit makes the i-th. An error of unit, which
// is one that concerns more than its own unit, ends the task.
func ModelUnits(ctx context.Context, t pipeline.Task, n, limit int, unit func(ctx context.Context, i int) (pipeline.Unit, error)) ([]pipeline.Unit, error) {
	units := make([]pipeline.Unit, n)
	err := t.Each(ctx, n, limit, func(ctx context.Context, i int) error {
		u, err := unit(ctx, i)
		units[i] = u
		return err
	})
	if err != nil {
		return nil, err
	}
	return units, nil
}

// Estimate forecasts the calls of t's model variant (VariantLLM) when a is
// set: one per turn from..to, with the prompt messages renders for the turn
// and an answer of tokens.
func Estimate(t pipeline.Task, f *pipeline.Forecast, a *LLM, tokens, from, to int, messages func(turn int) ([]conv.Message, error)) ([]pipeline.Call, error) {
	var out []pipeline.Call
	for _, v := range t.Variants {
		if v.Name != VariantLLM || a == nil {
			continue
		}
		for turn := from; turn <= to; turn++ {
			msgs, err := messages(turn)
			if err != nil {
				return nil, err
			}
			out = append(out, call(a, f, msgs, tokens))
		}
	}
	return out, nil
}

// call is the forecast of one call with msgs and an answer of tokens.
func call(a *LLM, f *pipeline.Forecast, msgs []conv.Message, tokens int) pipeline.Call {
	return pipeline.Call{Role: a.Role, Key: pipeline.MessagesKey(msgs), PromptTokens: f.MessagesTokens(msgs), CompletionTokens: tokens, Prefix: f.MessageSegments(msgs)}
}

// Window is the engine's model window for a's role (pipeline.ModelStage),
// 0 for a nil a: a stage whose annotators are all rule-based calls no model.
func (a *LLM) Window() int {
	if a == nil {
		return 0
	}
	return pipeline.DefaultWindow(a.Client, a.Role)
}

// Prompts lists the prompt a prepared a renders, none for a nil a, for the
// run to say which one is in use.
func (a *LLM) Prompts() []*prompt.Template {
	if a == nil {
		return nil
	}
	return []*prompt.Template{a.Prompt()}
}
