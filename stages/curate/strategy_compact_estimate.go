package curate

import (
	"context"
	"strconv"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

// compactTokens is the size the estimate expects of a compacted history:
// the order of magnitude of the paper's LLM compactors' summaries (Wang et
// al., App. B.1 and Table 11), and the budget it gave LLMLingua-2.
const compactTokens = 500

// compactedSize is the predicted size of head + C(H^t) + u_t with C(H^t)
// of compactTokens.
func compactedSize(c *conv.Conversation, ws *Workspace, t conv.Turn) int {
	_, head := systemHead(c, ws)
	return tokens.ReplyPrimer + head + ws.Cost(conv.Assistant, compactTokens) + messageCost(c, ws, t.User)
}

// forecast: one compaction call per turn with a history, its request the
// instructions and the history (which the next turn's request extends, so
// its prefix is the history's messages); the context's size assumes a
// summary of compactTokens. Nothing is called: a dry run calls nothing.
func (s *LLMCompact) forecast(_ context.Context, c *conv.Conversation, from int, ws *Workspace, _ []curated.Context, _ *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	sel, _ := selectTurns(c, from)
	out := make([]turnForecast, 0, len(sel))
	var calls []pipeline.Call
	for _, t := range sel {
		out = append(out, turnForecast{turn: t.Index, tokens: compactedSize(c, ws, t)})
		if t.User == 0 {
			continue
		}
		prefix := []pipeline.Segment{{Key: pipeline.KeyOf("llm-compact call", s.version), Tokens: instructionTokens}}
		n := templateTokens
		for i := range t.User {
			k := messageCost(c, ws, i)
			prefix = append(prefix, pipeline.Segment{Key: pipeline.KeyOf("llm-compact message", s.version, c.ID, strconv.Itoa(i)), Tokens: k})
			n += k
		}
		calls = append(calls, pipeline.Call{Role: s.role, Key: pipeline.KeyOf("llm-compact", s.version, c.ID, strconv.Itoa(t.User)),
			PromptTokens: n, CompletionTokens: compactTokens, Prefix: prefix})
	}
	return out, calls
}

// forecast: a plug-in is not run in a dry run; its contexts are sized as if
// it answered compactTokens.
func (s *PluginCompactor) forecast(_ context.Context, c *conv.Conversation, from int, ws *Workspace, _ []curated.Context, _ *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	sel, _ := selectTurns(c, from)
	out := make([]turnForecast, 0, len(sel))
	for _, t := range sel {
		out = append(out, turnForecast{turn: t.Index, tokens: compactedSize(c, ws, t)})
	}
	return out, nil
}

// forecast: the registry block added to the compactor's (see
// overlayForecast).
func (s *ExtractSC) forecast(ctx context.Context, c *conv.Conversation, from int, ws *Workspace, fcs []curated.Context, f *pipeline.Forecast) ([]turnForecast, []pipeline.Call) {
	return overlayForecast(ctx, s, s.inner, c, from, ws, fcs, f)
}

// callsOutside reports whether building st's contexts calls a model or a
// plug-in (a compactor's), which a dry run must not.
func callsOutside(st Strategy) bool {
	switch v := st.(type) {
	case *LLMCompact, *PluginCompactor:
		return true
	case *ExtractSC:
		return callsOutside(v.inner)
	}
	return false
}
