package curate_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
)

// TestEstimatePromptCachePrefixes works the dry run's prompt-cache
// estimate by hand for contexts a model decides (issue 33). The forecast
// counts a token per 4 bytes and 4 more per message, so u (400 bytes) is a
// segment of 104 tokens, a1 (4,000 bytes) 1,004 and a2 (2,000 bytes) 504.
//
//   - gated-reset past its floor (1): a turn's context begins, as while the
//     gate stays closed, with the full context of the turn before: turn 2
//     with u1 (104), turn 3 with u1 a1 u2 (104+1,004+104 = 1,212). Sent
//     after fc's calls, which began with the same messages, turn 3 has
//     1,212 tokens in common: 1,152 of them cacheable (1,024 and one block
//     of 128); turn 2's 104 are too few.
//   - sum: a turn's context is the one before with a summary (4+40) and the
//     next user message added: turn 3 begins u1 S(a1) u2 S(a2) u3, 104+44+
//     104+44+104 = 400 tokens, of which turn 2's context (u1 S(a1) u2, 252)
//     is shared.
//   - the rewrite call shows the conversation after its instructions (80):
//     turn 3's begins with turn 2's 80+8+100+8+1,000+8+100 = 1,304 tokens,
//     1,280 of them cacheable.
func TestEstimatePromptCachePrefixes(t *testing.T) {
	f := newFixture(t, analyzetest.Script{})
	u := func(c byte) string { return strings.Repeat(string(c), 400) }
	c := build("cache", "", "user", u('a'), "assistant", strings.Repeat("x", 4000), "user", u('b'), "assistant", strings.Repeat("y", 2000), "user", u('c'))
	gates := map[string]curate.Gate{"gated-reset": {Floor: 1, Cap: 3}, "rewrite": {Floor: 1, Cap: 3}}
	st := curate.NewStage([]curate.Strategy{
		strategy(t, "fc", curate.Options{}),
		strategy(t, "gated-reset", curate.Options{Analyzer: f.an, Gates: gates}),
		strategy(t, "sum", curate.Options{Analyzer: f.an}),
		strategy(t, "rewrite", curate.Options{Analyzer: f.an, Gates: gates}),
	}, counter(t), 1)
	fc := pipeline.NewForecast(func(s string) int { return len(s) / 4 })
	calls, err := st.Estimate(context.Background(), pipeline.Task{Conv: c, Variants: st.Variants()}, fc)
	if err != nil {
		t.Fatal(err)
	}
	tokens := func(p []pipeline.Segment) int {
		n := 0
		for _, s := range p {
			n += s.Tokens
		}
		return n
	}
	for _, tc := range []struct {
		variant string
		turn    int
		want    int
	}{
		{"gated-reset", 2, 104}, {"gated-reset", 3, 1212}, {"sum", 2, 252}, {"sum", 3, 400},
	} {
		p, ok := fc.Get(curate.StageName, tc.variant, tc.turn)
		if !ok {
			t.Fatalf("no prediction for %s at turn %d", tc.variant, tc.turn)
		}
		if got := tokens(p.Prefix); got != tc.want {
			t.Errorf("%s turn %d: prefix of %d tokens, want %d", tc.variant, tc.turn, got, tc.want)
		}
	}

	// Respond's calls, in the order a dry run counts them: each strategy's
	// turns in order, fc first.
	cache := pipeline.NewPrefixCache()
	cached := map[string][]int{}
	for _, v := range []string{"fc", "gated-reset", "sum"} {
		for turn := 2; turn <= 3; turn++ {
			p, _ := fc.Get(curate.StageName, v, turn)
			cached[v] = append(cached[v], llm.CacheableTokens(cache.Shared(pipeline.Call{Role: "respondent", Prefix: p.Prefix})))
		}
	}
	want := map[string][]int{"fc": {0, 1152}, "gated-reset": {0, 1152}, "sum": {0, 0}}
	for v, w := range want {
		if g := cached[v]; len(g) != 2 || g[0] != w[0] || g[1] != w[1] {
			t.Errorf("%s: cached %v, want %v", v, g, w)
		}
	}
	// Sum's shared prefix is real but short: 252 tokens at turn 3.
	sum := pipeline.NewPrefixCache()
	p2, _ := fc.Get(curate.StageName, "sum", 2)
	p3, _ := fc.Get(curate.StageName, "sum", 3)
	sum.Shared(pipeline.Call{Role: "respondent", Prefix: p2.Prefix})
	if got := sum.Shared(pipeline.Call{Role: "respondent", Prefix: p3.Prefix}); got != 252 {
		t.Errorf("sum turn 3 shares %d tokens with turn 2, want 252", got)
	}

	// The analyzer's calls: the rewrite of turn 3 begins with turn 2's.
	ac := pipeline.NewPrefixCache()
	head := pipeline.KeyOf("rewrite", f.an.RewriteVersion(analyze.RewriteAC3))
	var rewrites []int
	for _, call := range calls {
		shared := ac.Shared(call)
		if len(call.Prefix) > 0 && call.Prefix[0].Key == head {
			rewrites = append(rewrites, shared)
		}
	}
	if len(rewrites) != 2 || rewrites[0] != 0 || llm.CacheableTokens(rewrites[1]) != 1280 || rewrites[1] != 1304 {
		t.Errorf("rewrite calls shared %v tokens, want [0 1304] (1,280 cacheable)", rewrites)
	}
}

// TestEstimateMemoryCallsShareOnlyInstructions: the online memory's
// reflect and unify calls begin with their instructions (260 and 80
// tokens in the estimate) and then with what is the conversation's own, so
// within a conversation nothing but the instructions could be shared, and
// that is under the 1,024 tokens a provider caches: 0 cached, as the
// emulated endpoint finds (BenchmarkPromptCacheOperators).
func TestEstimateMemoryCallsShareOnlyInstructions(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, analyzetest.Script{})
	l, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st := onlineStage(t, srv, l)
	c := build("mem", "", "user", strings.Repeat("a", 4000), "assistant", strings.Repeat("x", 4000), "user", strings.Repeat("b", 400), "assistant", "ok", "user", "more")
	fc := pipeline.NewForecast(func(s string) int { return len(s) / 4 })
	calls, err := st.Estimate(context.Background(), pipeline.Task{Conv: c, Variants: st.Variants()}, fc)
	if err != nil {
		t.Fatal(err)
	}
	cache := pipeline.NewPrefixCache()
	var memory []int
	for _, call := range calls {
		shared := cache.Shared(call)
		if call.CompletionTokens >= 400 && len(call.Prefix) == 1 {
			memory = append(memory, call.Prefix[0].Tokens, llm.CacheableTokens(shared))
		}
	}
	if want := []int{260, 0, 80, 0}; !slices.Equal(memory, want) {
		t.Errorf("memory calls (instruction tokens, cached): %v, want %v", memory, want)
	}
}
