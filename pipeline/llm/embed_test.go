package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// embedHarness is a harness whose only endpoint is bound to the embedder
// role, two texts a request, at $2 per million input tokens.
func embedHarness(t *testing.T, so llmtest.Options, o func(*llm.Options)) *harness {
	t.Helper()
	return newHarness(t, so, func(e *llm.Endpoint) {
		e.Model = "emb-model"
		e.Price = llm.Price{Input: 2, Output: 9}
	}, func(opts *llm.Options) {
		opts.Roles = map[string]llm.RoleBinding{llm.EmbedderRole: {Endpoint: "test", Inputs: 2}}
		if o != nil {
			o(opts)
		}
	})
}

func TestEmbedCachedCostedRecorded(t *testing.T) {
	h := embedHarness(t, llmtest.Options{EmbedDim: 32}, nil)
	in := []string{"red apple", "green apple", "blue sky", "grey sky", "tomato"}
	ctx := context.Background()
	got, err := h.client.Embed(ctx, llm.EmbedRequest{Stage: "stitch", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	// 5 texts, 2 a request: 3 requests.
	if h.srv.Count() != 3 || got.Calls != 3 || got.Cached != 0 {
		t.Fatalf("requests %d, calls %d, cached %d; want 3, 3, 0", h.srv.Count(), got.Calls, got.Cached)
	}
	for i, s := range in {
		want := llmtest.Embedding(s, 32)
		if len(got.Vectors[i]) != 32 {
			t.Fatalf("vector %d has %d dims", i, len(got.Vectors[i]))
		}
		for j := range want {
			if got.Vectors[i][j] != want[j] {
				t.Fatalf("vector %d differs from the server's at %d", i, j)
			}
		}
	}
	// Tokens: len/4+1 each: "red apple" 9/4+1=3, "green apple" 11/4+1=3,
	// "blue sky" 8/4+1=3, "grey sky" 3, "tomato" 6/4+1=2: 14 tokens, at
	// $2 per million: $0.000028.
	if got.Usage.Prompt != 14 || math.Abs(got.CostUSD-28e-6) > 1e-12 {
		t.Fatalf("usage %d tokens, $%g; want 14 and $0.000028", got.Usage.Prompt, got.CostUSD)
	}
	tot := h.rec.Total()
	if tot.Calls != 3 || tot.Usage.Prompt != 14 || math.Abs(tot.CostUSD-28e-6) > 1e-12 {
		t.Fatalf("recorded %+v", tot)
	}
	for _, r := range h.rec.Records() {
		if r.Role != llm.EmbedderRole || r.Stage != "stitch" || r.Model != "emb-model" || r.Status != llm.StatusOK {
			t.Fatalf("record %+v", r)
		}
	}
	// Again: nothing sent, nothing paid.
	again, err := h.client.Embed(ctx, llm.EmbedRequest{Stage: "stitch", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if h.srv.Count() != 3 || again.Cached != 3 || again.CostUSD != 0 {
		t.Fatalf("second run: %d requests in all, %d cached, $%g", h.srv.Count(), again.Cached, again.CostUSD)
	}
	for i := range in {
		if !equal(again.Vectors[i], got.Vectors[i]) {
			t.Fatalf("cached vector %d differs", i)
		}
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEmbedBody(t *testing.T) {
	// The server takes only the endpoint's key: the request carries it.
	h := embedHarness(t, llmtest.Options{Key: testKey}, func(o *llm.Options) {
		o.Roles[llm.EmbedderRole] = llm.RoleBinding{Endpoint: "test", Params: llm.Params{Extra: map[string]any{"dimensions": 8}}}
	})
	if _, err := h.client.Embed(context.Background(), llm.EmbedRequest{Input: []string{"one text"}}); err != nil {
		t.Fatal(err)
	}
	c := h.srv.Calls()[0]
	if c.Path != "/v1/embeddings" {
		t.Fatalf("path %s", c.Path)
	}
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["model"] != "emb-model" || body["dimensions"] != 8.0 || len(c.Request.Inputs()) != 1 || c.Request.Inputs()[0] != "one text" {
		t.Fatalf("body %s", c.Body)
	}
}

func TestEmbedFaultsRetried(t *testing.T) {
	for _, f := range []llmtest.Fault{
		{Kind: llmtest.Status, Status: 500},
		{Kind: llmtest.Status, Status: 429, Headers: map[string]string{"retry-after-ms": "10"}},
		{Kind: llmtest.Truncated},
		{Kind: llmtest.Malformed},
		{Kind: llmtest.Garbled}, // one vector short
		{Kind: llmtest.Reset},
	} {
		t.Run(f.Kind.String()+"/"+strconv.Itoa(f.Status), func(t *testing.T) {
			h := embedHarness(t, llmtest.Options{}, nil)
			h.srv.Fail(llmtest.FirstN(1), f)
			got, err := h.client.Embed(context.Background(), llm.EmbedRequest{Input: []string{"a b", "c d"}})
			if err != nil {
				t.Fatal(err)
			}
			if h.srv.Count() != 2 || len(got.Vectors) != 2 {
				t.Fatalf("%d requests, %d vectors; want 2 and 2", h.srv.Count(), len(got.Vectors))
			}
			if n := len(h.cache.Keys()); n != 1 {
				t.Fatalf("%d cache entries", n)
			}
		})
	}
}

func TestEmbedRejected(t *testing.T) {
	h := embedHarness(t, llmtest.Options{}, nil)
	h.srv.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "input too long"})
	_, err := h.client.Embed(context.Background(), llm.EmbedRequest{Input: []string{"x"}})
	var ce *llm.CallError
	if !errors.As(err, &ce) || ce.Status != 400 || h.srv.Count() != 1 {
		t.Fatalf("err %v after %d requests; want one 400", err, h.srv.Count())
	}
	if _, err := h.client.Embed(context.Background(), llm.EmbedRequest{Input: []string{"  "}}); err == nil {
		t.Fatal("an empty input was sent")
	}
}

func TestEmbedNeedsItsRole(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, nil) // only the default role
	if h.client.HasEmbedder("") {
		t.Fatal("the default binding counts as an embedder")
	}
	if _, err := h.client.Embed(context.Background(), llm.EmbedRequest{Input: []string{"x"}}); !errors.Is(err, llm.ErrUnknownRole) || h.srv.Count() != 0 {
		t.Fatalf("err %v, %d requests", err, h.srv.Count())
	}
	// A chat role on the embedder's model is refused.
	_, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "e", BaseURL: h.srv.URL, Model: "m"}},
		Roles: map[string]llm.RoleBinding{llm.EmbedderRole: {Endpoint: "e"}, "judge": {Endpoint: "e"}}})
	if err == nil || !strings.Contains(err.Error(), "judge") {
		t.Fatalf("err %v", err)
	}
}

func TestEmbedBatchMode(t *testing.T) {
	d := &fakeDeferrer{decision: llm.Deferred}
	h := embedHarness(t, llmtest.Options{}, func(o *llm.Options) {
		o.Deferrer = d
		b := o.Roles[llm.EmbedderRole]
		b.Mode = llm.ModeBatch
		o.Roles[llm.EmbedderRole] = b
	})
	_, err := h.client.Embed(context.Background(), llm.EmbedRequest{Stage: "stitch", Input: []string{"a", "b", "c"}})
	if !errors.Is(err, llm.ErrDeferred) || h.srv.Count() != 0 || len(d.got) != 2 {
		t.Fatalf("err %v, %d sent, %d deferred; want ErrDeferred, 0, 2", err, h.srv.Count(), len(d.got))
	}
	if h.client.BatchURL("test") != "/v1/embeddings" {
		t.Fatalf("batch url %s", h.client.BatchURL("test"))
	}
	var first struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	for _, r := range d.got {
		if err := json.Unmarshal(r.Body, &first); err != nil {
			t.Fatal(err)
		}
		if first.Model != "emb-model" || r.Role != llm.EmbedderRole || r.Stage != "stitch" {
			t.Fatalf("deferred %+v", r)
		}
	}
	// The batch's answer, stored under the key, answers the call.
	for _, r := range d.got {
		var b struct {
			Input []string `json:"input"`
		}
		_ = json.Unmarshal(r.Body, &b)
		vs := make([]any, len(b.Input))
		for i, s := range b.Input {
			vs[i] = map[string]any{"index": i, "embedding": llmtest.Embedding(s, 8)}
		}
		body, _ := json.Marshal(map[string]any{"data": vs, "model": "emb-model", "usage": map[string]any{"prompt_tokens": 4}})
		cr, err := h.client.ParseAnswer("test", body)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.cache.Put(context.Background(), r.Key, cr); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.client.Embed(context.Background(), llm.EmbedRequest{Stage: "stitch", Input: []string{"a", "b", "c"}})
	if err != nil || got.Cached != 2 || len(got.Vectors) != 3 || h.srv.Count() != 0 {
		t.Fatalf("after import: err %v, %+v", err, got)
	}
}

func TestParseEmbeddings(t *testing.T) {
	tests := []struct {
		name, body string
		want       [][]float32
		tokens     int
	}{
		{"floats in index order", `{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}],"model":"m","usage":{"prompt_tokens":7}}`, [][]float32{{1, 0}, {0, 1}}, 7},
		{"base64, total tokens only", `{"data":[{"embedding":"AACAPwAAAEA="}],"usage":{"total_tokens":3}}`, [][]float32{{1, 2}}, 3},
		{"no index", `{"data":[{"embedding":[0.5]},{"embedding":[0.25]}]}`, [][]float32{{0.5}, {0.25}}, 0},
		{"no data", `{"data":[]}`, nil, 0},
		{"ragged", `{"data":[{"embedding":[1,2]},{"embedding":[1]}]}`, nil, 0},
		{"empty vector", `{"data":[{"embedding":[]}]}`, nil, 0},
		{"duplicate index", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`, nil, 0},
		{"index out of range", `{"data":[{"index":3,"embedding":[1]}]}`, nil, 0},
		{"overflow", `{"data":[{"embedding":[1e300]}]}`, nil, 0},
		{"not json", `{"data":`, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr, err := llm.ParseEmbeddings([]byte(tc.body))
			if tc.want == nil {
				if err == nil {
					t.Fatalf("accepted %s", tc.body)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			vs, err := llm.DecodeVectors(cr.Content)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != len(tc.want) || cr.Usage.Prompt != tc.tokens {
				t.Fatalf("got %v, %d tokens", vs, cr.Usage.Prompt)
			}
			for i := range vs {
				if !equal(vs[i], tc.want[i]) {
					t.Fatalf("vector %d: %v, want %v", i, vs[i], tc.want[i])
				}
			}
		})
	}
}

func FuzzParseEmbeddings(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1,0]}],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"data":[{"embedding":"AACAPwAAAEA="}]}`))
	f.Add([]byte(`{"data":[{"index":-1,"embedding":[1]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cr, err := llm.ParseEmbeddings(b)
		if err != nil {
			return
		}
		vs, err := llm.DecodeVectors(cr.Content)
		if err != nil {
			t.Fatalf("stored form of an accepted answer does not decode: %v", err)
		}
		if llm.EncodeVectors(vs) != cr.Content {
			t.Fatal("stored form does not round-trip")
		}
	})
}

func FuzzDecodeVectors(f *testing.F) {
	f.Add(llm.EncodeVectors([][]float32{{1, 2}, {3, 4}}))
	f.Add("ac3-vectors/1 f32le base64\n\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := llm.DecodeVectors(s)
		if err != nil {
			return
		}
		for _, v := range vs {
			if len(v) == 0 || len(v) != len(vs[0]) {
				t.Fatalf("accepted ragged or empty vectors from %q", s)
			}
		}
	})
}

func TestPingEmbedder(t *testing.T) {
	h := embedHarness(t, llmtest.Options{EmbedDim: 12}, nil)
	res, err := h.client.Ping(context.Background(), llm.EmbedderRole)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "an embedding of 12 dimensions" || h.srv.Calls()[0].Path != "/v1/embeddings" {
		t.Fatalf("ping %+v", res)
	}
}
