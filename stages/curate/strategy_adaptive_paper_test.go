package curate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/policy"
)

// The texts the paper's features embed: the user message, and the history
// as role-named paragraphs, only the first and the latest pair once there
// are more than four messages; a first turn has a fixed line.
func TestEmbedTexts(t *testing.T) {
	c := sevenTurns()
	tok := counter(t)
	for _, tt := range []struct {
		turn         int
		prompt, hist string
		max          int
	}{
		{1, "user message 1", "(no earlier messages)", 0},
		{2, "user message 2", "user: user message 1\n\nassistant: assistant reply 1", 0},
		{3, "user message 3", "user: user message 1\n\nassistant: assistant reply 1\n\nuser: user message 2\n\nassistant: assistant reply 2", 0},
		{5, "user message 5", "user: user message 1\n\nassistant: assistant reply 1\n\nuser: user message 4\n\nassistant: assistant reply 4", 0},
		{5, "user message", "user:", 2},
	} {
		p, h, err := curate.EmbedTexts(c, tt.turn, tok, tt.max)
		if err != nil || p != tt.prompt || h != tt.hist {
			t.Errorf("turn %d, cut at %d: %q / %q, %v; want %q / %q", tt.turn, tt.max, p, h, err, tt.prompt, tt.hist)
		}
	}
	if _, _, err := curate.EmbedTexts(c, 9, tok, 0); err == nil {
		t.Error("a turn past the end has texts")
	}
}

// paperConversations are n conversations of six turns whose user messages
// either ask to fix something or ask something new.
func paperConversations(n int) []*conv.Conversation {
	var out []*conv.Conversation
	for i := range n {
		var rc []string
		for k := 1; k <= 6; k++ {
			msg := fmt.Sprintf("please write a poem about topic %d", i*7+k)
			if (i+k)%3 == 0 {
				msg = fmt.Sprintf("fix the bug in your last answer, item %d", k)
			}
			rc = append(rc, "user", msg, "assistant", fmt.Sprintf("answer %d of conversation %d", k, i))
		}
		out = append(out, build(fmt.Sprintf("p%02d", i), "", rc...))
	}
	return out
}

const paperDim = 24

func embedTest(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		out[i] = llmtest.Embedding(s, paperDim)
	}
	return out, nil
}

// A policy on the paper's features scores a curated turn exactly as the
// fit saw that turn (FeaturesOf and EmbedTexts, embedded alike), asking for
// all the conversation's embeddings in one call; a deferred call defers the
// conversation (one batch round), a failed one fails its first turn, and
// the strategy is refused without an embedder or with another model.
func TestAdaptiveScoresThePapersFeatures(t *testing.T) {
	ctx := context.Background()
	convs := paperConversations(12)
	var ex []policy.Example
	for _, c := range convs {
		ws := curate.NewWorkspace(c, counter(t))
		for turn := 2; turn <= 6; turn++ {
			f, err := curate.FeaturesOf(ctx, c, turn, ws, nil, 50)
			if err != nil {
				t.Fatal(err)
			}
			vs, _ := embedTest(ctx, []string{f.PromptText, f.HistoryText})
			f.Prompt, f.History = vs[0], vs[1]
			win := 1.0
			if strings.HasPrefix(f.PromptText, "please") {
				win = 0
			}
			ex = append(ex, policy.Example{Conv: c.ID, TurnFeatures: f, FCWins: win})
		}
	}
	p, err := policy.Fit(ex, policy.FitOptions{Features: policy.FeaturesPaper, Embedder: "emb-1", EmbedMaxTokens: 50})
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	embed := func(ctx context.Context, texts []string) ([][]float32, error) {
		calls = append(calls, texts)
		return embedTest(ctx, texts)
	}
	opts := curate.Options{Adaptive: curate.AdaptiveOptions{Policy: curate.PolicyScored, Fitted: &p, Embed: embed, Embedder: "emb-1"}}
	s := strategy(t, "adaptive", opts)
	c := convs[3]
	xs := curateAll(t, s, c, 2)
	if len(calls) != 1 || len(calls[0]) != 2*len(xs) {
		t.Fatalf("%d embedding calls (%v), want one with %d texts", len(calls), calls, 2*len(xs))
	}
	ws := curate.NewWorkspace(c, counter(t))
	var ao, fc int
	for k, x := range xs {
		f, err := curate.FeaturesOf(ctx, c, x.Turn, ws, nil, 50)
		if err != nil {
			t.Fatal(err)
		}
		if calls[0][2*k] != f.PromptText || calls[0][2*k+1] != f.HistoryText {
			t.Errorf("turn %d: embedded %q, the fit's text is %q", x.Turn, calls[0][2*k], f.PromptText)
		}
		vs, _ := embedTest(ctx, []string{f.PromptText, f.HistoryText})
		f.Prompt, f.History = vs[0], vs[1]
		want, err := p.For(c.ID).Score(f, 0)
		if err != nil || !x.Info.Scored || math.Abs(x.Info.Score-want) > 1e-12 {
			t.Errorf("turn %d: score %v (scored %v), the fit's features give %v (%v)", x.Turn, x.Info.Score, x.Info.Scored, want, err)
		}
		if x.Info.Action == "ao" {
			ao++
		} else {
			fc++
		}
	}
	if ao == 0 || fc == 0 {
		t.Errorf("%d turns ao, %d fc: the policy learned nothing of the prompts", ao, fc)
	}

	deferred := opts
	deferred.Adaptive.Embed = func(context.Context, []string) ([][]float32, error) {
		return nil, fmt.Errorf("queued: %w", llm.ErrDeferred)
	}
	if _, err := strategy(t, "adaptive", deferred).Contexts(ctx, c, 2, curate.NewWorkspace(c, counter(t))); !errors.Is(err, llm.ErrDeferred) {
		t.Errorf("a deferred embedding call: %v", err)
	}
	if st := curate.NewStage([]curate.Strategy{strategy(t, "adaptive", deferred)}, counter(t), 2); func() int64 { n, _ := st.BatchRounds(100); return n }() != 1 {
		t.Error("the paper's policy does not take one batch round")
	}
	failing := opts
	failing.Adaptive.Embed = func(context.Context, []string) ([][]float32, error) { return nil, errors.New("server says no") }
	_, err = strategy(t, "adaptive", failing).Contexts(ctx, c, 2, curate.NewWorkspace(c, counter(t)))
	var te *curate.TurnError
	if !errors.As(err, &te) || te.Turn != 2 || !strings.Contains(err.Error(), "server says no") {
		t.Errorf("a failed embedding call: %v", err)
	}
	none := opts
	none.Adaptive.Embed = nil
	if _, err := curate.ByName("adaptive", none); err == nil || !strings.Contains(err.Error(), "embedder") {
		t.Errorf("without an embedder: %v", err)
	}
	other := opts
	other.Adaptive.Embedder = "emb-2"
	if _, err := curate.ByName("adaptive", other); err == nil || !strings.Contains(err.Error(), "emb-1") {
		t.Errorf("with another embedding model: %v", err)
	}
}
