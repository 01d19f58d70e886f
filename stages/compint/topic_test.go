package compint_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/compint"
)

// oneTurn is a conversation of one complete turn.
func oneTurn(id, user, reply string) *conv.Conversation {
	return &conv.Conversation{ID: id, Messages: []conv.Message{{Role: conv.User, Content: user}, {Role: conv.Assistant, Content: reply}}}
}

// threeOf returns options whose target every three of cs reach and no two
// do, with a cap that three fit under.
func threeOf(t *testing.T, cs []*conv.Conversation) compint.StitchOptions {
	t.Helper()
	tok := mustCounter(t)
	count := func(idx ...int) int {
		var msgs []conv.Message
		for _, i := range idx {
			msgs = append(msgs, cs[i].Messages...)
		}
		return tok.CountMessages(msgs)
	}
	two, lo3, hi3 := 0, 1<<30, 0
	for i := range cs {
		for j := range cs {
			if i == j {
				continue
			}
			two = max(two, count(i, j))
			for k := range cs {
				if k != i && k != j {
					lo3, hi3 = min(lo3, count(i, j, k)), max(hi3, count(i, j, k))
				}
			}
		}
	}
	target := two + 1
	if target > lo3 {
		t.Fatalf("fixture: two reach %d, three %d..%d: no target takes exactly three", two, lo3, hi3)
	}
	return compint.StitchOptions{TargetTokens: target, MaxTokens: hi3}
}

func sources(b *compint.Base) []string {
	var ids []string
	for _, s := range b.Sources {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestStitchTopicsHandWorked checks the neighbours chosen against sums
// worked by hand. Vectors (c0 given unnormalized, (5,0,0)):
//
//	c0 (1,0,0)  c1 (0,1,0)  c2 (.6,.8,0)  c3 (0,0,1)
//	c4 (.8,0,.6)  c5 (0,.6,.8)  c6 (.96,.28,0)
//
// Context 1: seed c0, sum (1,0,0); dots c1 0, c2 .6, c3 0, c4 .8, c5 0,
// c6 .96: c6. Sum (1.96,.28,0); dots c1 .28, c2 1.176+.224 = 1.4, c3 0,
// c4 1.568, c5 .168: c4. Three conversations reach the target.
// Context 2: seed c1 (the first unused), sum (0,1,0); dots c2 .8, c3 0,
// c5 .6: c2. Sum (.6,1.8,0); c3 0, c5 1.08: c5.
// Context 3: seed c3, nothing left: dropped as leftover.
// In input order the contexts would be c0 c1 c2 and c3 c4 c5.
func TestStitchTopicsHandWorked(t *testing.T) {
	vecs := [][]float32{{5, 0, 0}, {0, 1, 0}, {.6, .8, 0}, {0, 0, 1}, {.8, 0, .6}, {0, .6, .8}, {.96, .28, 0}}
	var cs []*conv.Conversation
	byID := map[string]*conv.Conversation{}
	pool := &compint.TopicPool{}
	for i, v := range vecs {
		id := fmt.Sprintf("c%d", i)
		c := oneTurn(id, "question about item number "+id, "answer about item number "+id)
		cs = append(cs, c)
		byID[id] = c
		if err := pool.Add(id, int64(100+i), v); err != nil {
			t.Fatal(err)
		}
	}
	opt := threeOf(t, cs)
	st, err := compint.NewStitcher(mustCounter(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	var parents []int64
	var reads []string
	get := func(_ context.Context, id string) (*conv.Conversation, error) {
		reads = append(reads, id)
		return byID[id], nil
	}
	err = compint.StitchTopics(context.Background(), pool, st, get, func(b *compint.Base, seq int64) error {
		checkBase(t, b, opt, byID)
		got = append(got, sources(b))
		parents = append(parents, seq)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"c0", "c6", "c4"}, {"c1", "c2", "c5"}}
	if fmt.Sprint(got) != fmt.Sprint(want) || !slices.Equal(parents, []int64{104, 105}) {
		t.Fatalf("contexts %v with parents %v; want %v with 104, 105", got, parents, want)
	}
	if s := st.Stats(); s.Contexts != 2 || s.LeftoverConversations != 1 || s.Used != 6 {
		t.Fatalf("stats %+v", s)
	}
	if fmt.Sprint(reads) != "[c0 c6 c4 c1 c2 c5 c3]" {
		t.Fatalf("read %v: each conversation once, when appended", reads)
	}
}

func TestStitchTopicsTiesAndMax(t *testing.T) {
	// c1 and c2 are equally near c0: the one added first wins; then
	// MaxContexts 1 ends stitching.
	vecs := [][]float32{{1, 0}, {0, 1}, {0, 1}, {1, 1}}
	var cs []*conv.Conversation
	byID := map[string]*conv.Conversation{}
	pool := &compint.TopicPool{}
	for i, v := range vecs {
		id := fmt.Sprintf("t%d", i)
		c := oneTurn(id, "question about item number "+id, "answer about item number "+id)
		cs, byID[id] = append(cs, c), c
		if err := pool.Add(id, int64(i+1), v); err != nil {
			t.Fatal(err)
		}
	}
	opt := threeOf(t, cs)
	opt.MaxContexts = 1
	st, err := compint.NewStitcher(mustCounter(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	err = compint.StitchTopics(context.Background(), pool, st, func(_ context.Context, id string) (*conv.Conversation, error) { return byID[id], nil },
		func(b *compint.Base, _ int64) error { got = append(got, sources(b)); return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Seed t0 (1,0): t3 (1,1)/√2 scores .707, t1 and t2 0: t3. Sum
	// (1.707,.707): t1 and t2 tie at .707: t1.
	if fmt.Sprint(got) != "[[t0 t3 t1]]" {
		t.Fatalf("got %v", got)
	}
	if err := pool.Add("bad", 9, []float32{0, 0}); err == nil {
		t.Fatal("a zero vector was accepted")
	}
	if err := pool.Add("short", 9, []float32{1}); err == nil {
		t.Fatal("a vector of another length was accepted")
	}
}

// TestStitchTopicsThroughEmbedder embeds the conversations through the
// embedder role against the test server (a normalized hashed bag of
// words): conversations on one topic share words, so each context holds
// one topic, where input order interleaves them.
func TestStitchTopicsThroughEmbedder(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{EmbedDim: 256})
	cache := llm.NewMemCache()
	client, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "emb", BaseURL: srv.URL, Model: "emb-model", Timeout: 2 * time.Second, MaxAttempts: 3, Price: llm.Price{Input: 1}}},
		Roles:     map[string]llm.RoleBinding{llm.EmbedderRole: {Endpoint: "emb", Inputs: 4}},
		Cache:     cache,
	})
	if err != nil {
		t.Fatal(err)
	}
	cooking := []string{"pasta tomato basil sauce", "basil pesto pasta garlic", "tomato garlic sauce simmer"}
	coding := []string{"rust compiler borrow checker", "compiler error lifetime borrow", "rust lifetime checker error"}
	var cs []*conv.Conversation
	byID := map[string]*conv.Conversation{}
	for i := range cooking {
		for _, c := range []*conv.Conversation{
			oneTurn(fmt.Sprintf("cook%d", i), cooking[i], "noted "+cooking[i]),
			oneTurn(fmt.Sprintf("code%d", i), coding[i], "noted "+coding[i]),
		} {
			cs, byID[c.ID] = append(cs, c), c
		}
	}
	tok := mustCounter(t)
	embedAll := func() *compint.TopicPool {
		var texts []string
		for _, c := range cs {
			texts = append(texts, compint.EmbedText(tok, c, compint.DefaultEmbedMaxTokens))
		}
		if texts[0] != cooking[0]+"\n\nnoted "+cooking[0] {
			t.Fatalf("embedded text %q", texts[0])
		}
		res, err := client.Embed(context.Background(), llm.EmbedRequest{Stage: "compint", Input: texts})
		if err != nil {
			t.Fatal(err)
		}
		pool := &compint.TopicPool{}
		for i, c := range cs {
			if err := pool.Add(c.ID, int64(i+1), res.Vectors[i]); err != nil {
				t.Fatal(err)
			}
		}
		return pool
	}
	pool := embedAll()
	if srv.Count() != 2 { // 6 texts, 4 a request
		t.Fatalf("%d requests", srv.Count())
	}
	st, err := compint.NewStitcher(tok, threeOf(t, cs))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = compint.StitchTopics(context.Background(), pool, st, func(_ context.Context, id string) (*conv.Conversation, error) { return byID[id], nil },
		func(b *compint.Base, _ int64) error { got = append(got, strings.Join(sources(b), " ")); return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Each text is its turn's words twice and "noted" once: a norm of
	// √17 (no two words share a dimension at 256). From seed cook0,
	// cook1 shares pasta and basil, cook2 tomato and sauce: both 9/17,
	// the code texts 1/17 ("noted"): the tie goes to cook1, added first.
	// Seed code0 likewise ties code1 (compiler, borrow) and code2 (rust,
	// checker) at 9/17: code1.
	if fmt.Sprint(got) != "[cook0 cook1 cook2 code0 code1 code2]" {
		t.Fatalf("contexts %q: want each topic whole", got)
	}
	embedAll()
	if srv.Count() != 2 {
		t.Fatalf("a second embedding sent %d requests more", srv.Count()-2)
	}
}

func TestEmbedTextCut(t *testing.T) {
	tok := mustCounter(t)
	c := oneTurn("x", strings.Repeat("héllo wörld ", 50), "fine")
	c.System = "be brief"
	full := compint.EmbedText(tok, c, 0)
	if !strings.HasPrefix(full, "be brief\n\nhéllo") || !strings.HasSuffix(full, "\n\nfine") {
		t.Fatalf("text %q", full)
	}
	cut := compint.EmbedText(tok, c, 10)
	if n := tok.Count(cut); n > 10 || n < 8 || !strings.HasPrefix(full, cut) {
		t.Fatalf("cut to %d tokens: %q", n, cut)
	}
	if compint.EmbedText(tok, oneTurn("e", " ", " "), 10) != "" {
		t.Fatal("a conversation with no text gave text")
	}
}
