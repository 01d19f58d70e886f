package batch_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/batch"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// TestBatchEmbeddings: the embedder role in batch mode queues its
// requests, the driver sends them as /v1/embeddings lines in a batch of
// that endpoint, imports the answers at the batch price, and Embed then
// answers from the cache without a request.
func TestBatchEmbeddings(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.New(t, llmtest.Options{EmbedDim: 16})
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "emb", BaseURL: srv.URL, Model: "emb-model", Mode: llm.ModeBatch, Timeout: 5 * time.Second,
			Price: llm.Price{Input: 2, Output: 4}}},
		Roles: map[string]llm.RoleBinding{llm.EmbedderRole: {Endpoint: "emb", Inputs: 2}},
		Cache: l.LLMCache(), Recorder: l.LLMRecorder(), Deferrer: l.BatchQueue(),
	})
	if err != nil {
		t.Fatal(err)
	}
	in := []string{"red apple", "green apple", "blue sky"}
	if _, err := c.Embed(ctx, llm.EmbedRequest{Stage: "compint", Input: in}); !errors.Is(err, llm.ErrDeferred) {
		t.Fatalf("err %v, want deferred", err)
	}
	if srv.Count() != 0 {
		t.Fatalf("%d requests sent online", srv.Count())
	}
	d, err := batch.New(batch.Options{Client: c, Ledger: l, Poll: time.Millisecond, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(ctx); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d batch lines answered, want 2", len(calls))
	}
	for _, cl := range calls {
		if cl.Batch == "" || cl.Path != "/v1/embeddings" {
			t.Fatalf("line answered at %s in batch %q", cl.Path, cl.Batch)
		}
	}
	got, err := c.Embed(ctx, llm.EmbedRequest{Stage: "compint", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if got.Cached != 2 || srv.Count() != 2 {
		t.Fatalf("after the batch: %d cached, %d requests", got.Cached, srv.Count())
	}
	for i, s := range in {
		want := llmtest.Embedding(s, 16)
		for j := range want {
			if got.Vectors[i][j] != want[j] {
				t.Fatalf("vector %d differs at %d", i, j)
			}
		}
	}
	// Tokens: "red apple" 3 + "green apple" 3, "blue sky" 3: 9 tokens at
	// the batch price, half of $2 per million: $0.000009.
	spent, err := l.SpendUSD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(spent-9e-6) > 1e-12 {
		t.Fatalf("spent $%g, want $0.000009", spent)
	}
}

func TestURLOf(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","input":["a"]}`:                batch.EmbedURL,
		`{"model":"m","messages":[{"role":"user"}]}`: batch.ChatURL,
		`not json`: batch.ChatURL,
		`{"model":"m","input":"a","messages":[]}`: batch.ChatURL,
	} {
		if got := batch.URLOf([]byte(body)); got != want {
			t.Errorf("URLOf(%s) = %s, want %s", body, got, want)
		}
	}
	line, err := batch.AppendInputLineURL(nil, batch.EmbedURL, "k1", []byte(`{"model":"m","input":["a"]}`))
	if err != nil || string(line) != `{"custom_id":"k1","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":["a"]}}`+"\n" {
		t.Fatalf("line %q, %v", line, err)
	}
}
