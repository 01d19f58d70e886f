package llm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// Each server kind reports the prompt tokens its cache served in a field
// of its own; all of them end up in Usage.CachedPrompt.
func TestCachedTokensOfEveryServerKind(t *testing.T) {
	const head = `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`
	for _, tc := range []struct {
		name         string
		tail         string
		prompt, want int
	}{
		{"OpenAI, Azure, vLLM", `"usage":{"prompt_tokens":2000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":1536}}}`, 2000, 1536},
		{"Anthropic-compatible", `"usage":{"prompt_tokens":2000,"completion_tokens":5,"cache_read_input_tokens":1024}}`, 2000, 1024},
		{"DeepSeek", `"usage":{"prompt_tokens":2000,"completion_tokens":5,"prompt_cache_hit_tokens":1920}}`, 2000, 1920},
		{"llama.cpp counting the whole prompt", `"usage":{"prompt_tokens":2000,"completion_tokens":5},"timings":{"cache_n":1900,"prompt_n":100}}`, 2000, 1900},
		{"llama.cpp counting what it evaluated", `"usage":{"prompt_tokens":100,"completion_tokens":5},"timings":{"cache_n":1900,"prompt_n":100}}`, 2000, 1900},
		{"older llama.cpp", `"usage":{"prompt_tokens":2000,"completion_tokens":5},"tokens_cached":1800}`, 2000, 1800},
		{"no cache", `"usage":{"prompt_tokens":2000,"completion_tokens":5}}`, 2000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := llm.ParseCompletion([]byte(head + tc.tail))
			if err != nil {
				t.Fatal(err)
			}
			if r.Usage.Prompt != tc.prompt || r.Usage.CachedPrompt != tc.want {
				t.Errorf("usage %+v, want %d prompt, %d cached", r.Usage, tc.prompt, tc.want)
			}
		})
	}
}

// A call served partly from the endpoint's prompt cache is priced at the
// model's cached price for that part.
func TestCachedTokensArePricedAtTheCachedPrice(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	price := llm.Price{Input: 1, CachedInput: 0.1, Output: 2}
	c, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "e", BaseURL: srv.URL, APIKey: "k", Model: "m", Timeout: 5 * time.Second, MaxAttempts: 1, Price: price}}})
	if err != nil {
		t.Fatal(err)
	}
	history := strings.Repeat("the same long conversation. ", 600)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []llm.Response
	for _, q := range []string{"first question", "second question"} {
		r, err := c.Call(ctx, llm.Request{Messages: []conv.Message{{Role: conv.User, Content: history + q}}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if got[0].Usage.CachedPrompt != 0 || got[1].Usage.CachedPrompt < 1024 {
		t.Fatalf("cached %d then %d", got[0].Usage.CachedPrompt, got[1].Usage.CachedPrompt)
	}
	if want := price.Cost(got[1].Usage); got[1].CostUSD != want || want >= price.Cost(llm.Usage{Prompt: got[1].Usage.Prompt, Completion: got[1].Usage.Completion}) {
		t.Errorf("cost %v, want %v, below the uncached price", got[1].CostUSD, want)
	}
}
