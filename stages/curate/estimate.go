package curate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Answer lengths the estimate expects of the analyzer's calls, and the size
// of their prompts' fixed text. They are rough: what matters most for a
// plan is the number of calls, which the estimate counts exactly where it
// can and from above where it cannot.
const (
	specTokens     = 300 // step 1's answer: the consolidated request
	evaluateTokens = 400 // step 2's answer: aligned work and issues
	rewriteTokens  = 400
	summaryTokens  = 60
	reflectTokens  = 400
	unifyTokens    = 1500 * 4 / 3 // a full cheatsheet
	templateTokens = 400          // the instructions around a prompt's data
	// instructionTokens is the part of templateTokens before the data: the
	// system message and the first lines, the same in every call of a step.
	instructionTokens = 80
	// memoryInstructionTokens is the reflection's system message and the
	// paragraphs before the trajectory.
	memoryInstructionTokens = 260
	overlayTokens           = 60 // a registry block, when the turn has one
	summaryOfReply          = 40 // a one-sentence summary in a sum context
	analysisCallsAt         = "analysis"
)

// turnForecast is what a strategy expects at one turn: its context when it
// can be known without a call (known is then set), else its size and, when
// it can tell, how the context begins (prefix, for the prompt-cache
// estimate of the calls that send it; see pipeline.Call.Prefix).
type turnForecast struct {
	turn   int
	known  []conv.Message
	tokens int
	prefix []pipeline.Segment
}

// forecaster is implemented by strategies whose contexts need a model or
// other stages' answers. The others are forecast by building their
// contexts, which costs no call.
type forecaster interface {
	forecast(ctx context.Context, c *conv.Conversation, from int, ws *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call)
}

// Estimate implements pipeline.Estimator. Strategies that need no model
// are curated for real (no call); the AC3 operators are counted as if every
// turn past their floor were analyzed (the cap is not known in advance, so
// this is an upper bound), and the contexts they would build past it are
// counted at full-context size. Every variant's predicted context goes into
// f, so respond can tell which strategies give the same context.
func (s *Stage) Estimate(ctx context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	// Rule-based strategies make no call: their contexts are built only
	// when a later stage reads them (respond counts its prompts from them).
	wanted := f.Wanted(StageName)
	need := wanted
	for _, v := range t.Variants {
		st, ok := s.byName[v.Name]
		if !ok {
			return nil, fmt.Errorf("estimating %s: no strategy %q", t.Conv.ID, v.Name)
		}
		if _, ok := st.(forecaster); ok {
			need = true
		}
	}
	if !need {
		return nil, nil
	}
	ws := NewWorkspace(t.Conv, s.counter)
	ws.words = s.fillerWords()
	fcs, err := FullContext{}.Contexts(ctx, t.Conv, s.from, ws)
	if err != nil {
		return nil, err
	}
	var calls []pipeline.Call
	for _, v := range t.Variants {
		st := s.byName[v.Name]
		var turns []turnForecast
		fo, isForecaster := st.(forecaster)
		if !isForecaster && !wanted {
			continue
		}
		if isForecaster {
			var cs []pipeline.Call
			turns, cs = fo.forecast(ctx, t.Conv, s.from, ws, fcs, f)
			calls = append(calls, cs...)
		} else {
			xs, err := st.Contexts(ctx, t.Conv, s.from, ws)
			var te *TurnError
			if err != nil && !errors.As(err, &te) {
				return nil, fmt.Errorf("estimating %s with %s: %w", t.Conv.ID, v.Name, err)
			}
			turns = known(t.Conv, xs)
		}
		for _, tf := range turns {
			p := pipeline.Predicted{Key: pipeline.KeyOf(StageName, v.Name, t.Conv.ID, strconv.Itoa(tf.turn)), Tokens: tf.tokens}
			if tf.known != nil {
				p.Key, p.Prefix = pipeline.MessagesKey(tf.known), f.MessagesPrefix(tf.known)
			} else {
				p.Prefix = tf.prefix
			}
			f.Set(StageName, v.Name, tf.turn, p)
		}
	}
	return calls, nil
}

// Estimate implements pipeline.Estimator: the curate stage's calls, plus,
// for every conversation, the analysis of each turn from the chain's first
// (shared with the operators) and one reflection and one unify call.
func (s *OnlineStage) Estimate(ctx context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	calls, err := s.Stage.Estimate(ctx, t, f)
	if err != nil {
		return nil, err
	}
	ws := NewWorkspace(t.Conv, s.counter)
	ws.words = s.fillerWords()
	fcs, err := FullContext{}.Contexts(ctx, t.Conv, s.mem.From(), ws)
	if err != nil {
		return nil, err
	}
	var sheet int
	for _, x := range fcs {
		calls = append(calls, analysisCalls(s.mem.Analyzer(), "online:"+s.mem.Chain().ID, t.Conv, x, f)...)
		sheet += x.Tokens
	}
	if len(fcs) > 0 {
		calls = append(calls, memoryCalls(s.mem.Analyzer(), s.mem.Chain().ID, t.Conv.ID, len(fcs))...)
	}
	return calls, nil
}

// memoryCalls are the online memory's two calls after a conversation of
// turns analyzed turns: the reflection on its trajectory and the unify
// that merges the takeaways into the cheatsheet. For the prompt-cache
// estimate each begins with its fixed instructions, the same in every
// conversation's call, and then with what is this conversation's own (the
// trajectory; the cheatsheet, which every conversation changes), which no
// earlier call began with: only the instructions can be shared, and they
// are shorter than the least a provider caches (llm.CacheableTokens), so
// the estimate, like the providers, counts none of it cached.
func memoryCalls(an *analyze.Analyzer, chain, convID string, turns int) []pipeline.Call {
	role, v := analyzerRole(an), an.MemoryVersion()
	return []pipeline.Call{
		{Role: role, Key: pipeline.KeyOf("reflect", chain, convID), PromptTokens: templateTokens + turns*(specTokens+evaluateTokens), CompletionTokens: reflectTokens,
			Prefix: []pipeline.Segment{{Key: pipeline.KeyOf("reflect", v), Tokens: memoryInstructionTokens}}},
		{Role: role, Key: pipeline.KeyOf("unify", chain, convID), PromptTokens: templateTokens + unifyTokens + reflectTokens, CompletionTokens: unifyTokens,
			Prefix: []pipeline.Segment{{Key: pipeline.KeyOf("unify", v), Tokens: instructionTokens}}},
	}
}

// known turns built contexts into forecasts.
func known(c *conv.Conversation, xs []curated.Context) []turnForecast {
	out := make([]turnForecast, len(xs))
	for i, x := range xs {
		out[i] = turnForecast{turn: x.Turn, known: x.Materialize(c), tokens: x.Tokens}
	}
	return out
}

func analyzerRole(an *analyze.Analyzer) string { return an.Role() }

// analysisCalls are the calls of the analysis of turn x.Turn: two steps,
// or one for the single-pass ablation. Every operator with the same
// analyzer and memory shares them, and their keys say so.
func analysisCalls(an *analyze.Analyzer, memory string, c *conv.Conversation, x curated.Context, f *pipeline.Forecast) []pipeline.Call {
	role, turn := analyzerRole(an), strconv.Itoa(x.Turn)
	key := func(step string) string {
		return pipeline.KeyOf(analysisCallsAt, an.Version(), memory, c.ID, turn, step)
	}
	if an.Ablation() == analyze.AblationSinglePass {
		return []pipeline.Call{{Role: role, Key: key("single"), PromptTokens: templateTokens + x.Tokens, CompletionTokens: specTokens + evaluateTokens}}
	}
	spec := templateTokens + f.MessagesTokens(conv.NewUserView(c, x.Turn).Messages())
	if an.Ablation() == analyze.AblationContagiousExtractor {
		spec = templateTokens + x.Tokens
	}
	calls := []pipeline.Call{
		{Role: role, Key: key("spec"), PromptTokens: spec, CompletionTokens: specTokens},
		{Role: role, Key: key("evaluate"), PromptTokens: templateTokens + specTokens + x.Tokens, CompletionTokens: evaluateTokens},
	}
	if an.Ablation() == analyze.NoAblation {
		// Both steps show the conversation right after their fixed
		// instructions, message by message, so the next turn's call begins
		// with this one's: the prompt-cache estimate.
		calls[0].Prefix = messagePrefix(pipeline.KeyOf("spec", an.Version()), conv.NewUserView(c, x.Turn).Messages(), f)
		if ct, ok := c.ContextBefore(x.Turn); ok {
			calls[1].Prefix = messagePrefix(pipeline.KeyOf("evaluate", an.Version()), ct, f)
		}
	}
	return calls
}

// messagePrefix is a prompt's beginning for the prompt-cache estimate: its
// fixed instructions (keyed by head), then msgs one by one.
func messagePrefix(head string, msgs []conv.Message, f *pipeline.Forecast) []pipeline.Segment {
	out := []pipeline.Segment{{Key: head, Tokens: instructionTokens}}
	for _, m := range msgs {
		out = append(out, pipeline.Segment{Key: pipeline.KeyOf(string(m.Role), m.Content), Tokens: 8 + f.Count(m.Content)})
	}
	return out
}

// forecast: up to the floor an operator passes the full context through;
// past it every turn is analyzed, and what the context becomes depends on
// the analysis.
func (s *Operator) forecast(_ context.Context, c *conv.Conversation, _ int, _ *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	return operatorForecast(s.op, s.an, s.gate, s.form.rewrite, s.sheet.Hash, c, fcs, f)
}

func (s *onlineOperator) forecast(_ context.Context, c *conv.Conversation, _ int, _ *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	return operatorForecast(s.op, s.an, s.gate, s.form.rewrite, "online", c, fcs, f)
}

// Past the floor, what a turn's context holds depends on the analysis; its
// size is counted as the full context's (an upper bound), and for the
// prompt-cache estimate it begins as it does while the gate stays closed:
// with the full context of the turn before, which the previous turn's
// request sent (see previousContext). After a reset the context and the
// part of it a cache serves are both smaller; like the size, the estimate
// is then an upper bound.
//
// The rewrite call shows the conversation right after its fixed
// instructions, so the next turn's call begins with this one's.
func operatorForecast(op string, an *analyze.Analyzer, g Gate, rw analyze.RewriteVariant, memory string, c *conv.Conversation, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	var calls []pipeline.Call
	out := make([]turnForecast, 0, len(fcs))
	for _, x := range fcs {
		if x.Turn <= g.Floor {
			out = append(out, turnForecast{turn: x.Turn, known: x.Materialize(c), tokens: x.Tokens})
			continue
		}
		calls = append(calls, analysisCalls(an, memory, c, x, f)...)
		if op == curated.OpRewrite {
			rewrite := pipeline.Call{Role: analyzerRole(an), Key: pipeline.KeyOf(curated.OpRewrite, an.Version(), memory, c.ID, strconv.Itoa(x.Turn)),
				PromptTokens: templateTokens + specTokens + evaluateTokens + x.Tokens, CompletionTokens: rewriteTokens}
			if ct, ok := c.ContextBefore(x.Turn); ok {
				rewrite.Prefix = messagePrefix(pipeline.KeyOf("rewrite", an.RewriteVersion(rw)), ct, f)
			}
			calls = append(calls, rewrite)
		}
		out = append(out, turnForecast{turn: x.Turn, tokens: x.Tokens, prefix: f.MessagesPrefix(previousContext(x.Materialize(c)))})
	}
	return out, calls
}

// previousContext is the full context of the turn before msgs's (a full
// context, ending with u_t): msgs up to the user message before u_t, or
// only the system messages in front when there is none.
func previousContext(msgs []conv.Message) []conv.Message {
	end := len(msgs)
	for end > 0 && msgs[end-1].Role == conv.User {
		end-- // u_t (and a user message right before it, sent with it)
	}
	for end > 0 && msgs[end-1].Role != conv.User {
		end-- // the replies to the turn before
	}
	if end == 0 {
		return msgs[:systemRun(msgs)]
	}
	return msgs[:end]
}

// systemRun counts the system messages msgs begins with.
func systemRun(msgs []conv.Message) int {
	n := 0
	for n < len(msgs) && msgs[n].Role == conv.System {
		n++
	}
	return n
}

// forecast: one summary call per assistant reply before the last curated
// turn, each reused by every later turn. A turn's context is the one of the
// turn before with the summary of the reply and the next user message
// added, so for the prompt-cache estimate it begins with the previous
// turn's; a summary, not known in advance, is keyed by the reply it stands
// for.
func (s *Summarized) forecast(_ context.Context, c *conv.Conversation, from int, ws *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	sel, _ := selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil
	}
	var calls []pipeline.Call
	role := analyzerRole(s.an)
	lastUser := 0
	for i := 0; i < sel[len(sel)-1].User; i++ {
		m := c.Messages[i]
		if m.Role == conv.User {
			lastUser = ws.Message(i)
		}
		if isAssistantSide(m.Role) {
			// Only the instructions are shared, too few tokens for a
			// provider's cache: the request holds nothing else in common.
			calls = append(calls, pipeline.Call{Role: role, Key: pipeline.KeyOf("summary", s.version, c.ID, strconv.Itoa(i)),
				PromptTokens: templateTokens + lastUser + ws.Message(i), CompletionTokens: summaryTokens,
				Prefix: []pipeline.Segment{{Key: pipeline.KeyOf("summary call", s.version), Tokens: instructionTokens}}})
		}
	}
	out := make([]turnForecast, len(fcs))
	for k, x := range fcs {
		n := x.Tokens
		for i := 0; i < sel[k].User; i++ {
			if isAssistantSide(c.Messages[i].Role) {
				n += summaryOfReply - ws.Message(i)
			}
		}
		out[k] = turnForecast{turn: x.Turn, tokens: max(n, 0), prefix: s.prefix(x.Materialize(c), f)}
	}
	return out, calls
}

// prefix is the prompt-cache estimate's beginning of the sum context made
// from full, a full context: its messages, with each reply's summary in
// place of the reply.
func (s *Summarized) prefix(full []conv.Message, f *pipeline.Forecast) []pipeline.Segment {
	out := f.MessagesPrefix(full)
	for i, m := range full {
		if isAssistantSide(m.Role) {
			out[i] = pipeline.Segment{Key: pipeline.KeyOf("summary", s.version, string(m.Role), m.Content), Tokens: 4 + summaryOfReply}
		}
	}
	return out
}

// forecast: with the classify units in the run the choice is made as the
// run would make it (no call); without them each turn is fc or ao, not
// known which.
//
// A policy on the paper's features asks for the turns' embeddings (a call
// per llm.DefaultEmbedInputs texts of a conversation, counted with our
// tokenizer), whose answers decide: each turn is then fc or ao, not known
// which.
func (s *Adaptive) forecast(ctx context.Context, c *conv.Conversation, from int, ws *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	var calls []pipeline.Call
	if s.opts.Policy == PolicyScored && s.opts.Fitted.Paper() {
		sel, _ := selectTurns(c, from)
		if texts, err := s.embedTexts(c, sel, ws); err == nil {
			for chunk := range slices.Chunk(texts, llm.DefaultEmbedInputs) {
				call := pipeline.Call{Role: llm.EmbedderRole, Key: pipeline.KeyOf(append([]string{"adaptive-embed"}, chunk...)...)}
				for _, t := range chunk {
					call.PromptTokens += f.Count(t)
				}
				calls = append(calls, call)
			}
		}
	} else if xs, err := s.Contexts(ctx, c, from, ws); err == nil {
		return known(c, xs), nil
	}
	out := make([]turnForecast, len(fcs))
	for k, x := range fcs {
		out[k] = turnForecast{turn: x.Turn, tokens: x.Tokens}
	}
	return out, calls
}

// forecast: the inner strategy's, with the registry block (whose content
// the constraints stage decides) making each context its own.
func (s *constraintsOverlay) forecast(ctx context.Context, c *conv.Conversation, from int, ws *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	return overlayForecast(ctx, s, s.inner, c, from, ws, fcs, f)
}

// overlayForecast is the forecast of own, a strategy that adds a block the
// constraints stage decides (about overlayTokens) to inner's contexts, just
// before u_t or joined to it: over an inner strategy that calls nothing,
// own's contexts themselves (they read the constraints units, no call);
// otherwise inner's forecast with the block added, each context's cached
// prefix ending before u_t.
func overlayForecast(ctx context.Context, own, inner Strategy, c *conv.Conversation, from int, ws *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	if !callsOutside(inner) {
		if xs, err := own.Contexts(ctx, c, from, ws); err == nil {
			return known(c, xs), nil
		}
	}
	var turns []turnForecast
	var calls []pipeline.Call
	if fo, ok := inner.(forecaster); ok {
		turns, calls = fo.forecast(ctx, c, from, ws, fcs, f)
	} else if xs, err := inner.Contexts(ctx, c, from, ws); err == nil {
		turns = known(c, xs)
	}
	for i := range turns {
		if len(turns[i].known) > 0 {
			turns[i].prefix = f.MessagesPrefix(turns[i].known[:len(turns[i].known)-1])
		} else if n := len(turns[i].prefix); n > 0 {
			turns[i].prefix = turns[i].prefix[:n-1]
		}
		turns[i].known = nil
		turns[i].tokens += overlayTokens
	}
	return turns, calls
}
