package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
)

func TestEmbedderRole(t *testing.T) {
	base := `run: {db: run.db}
endpoints:
  e: {base_url: http://x/v1}
models:
  chat: {endpoint: e}
  qwen3-embedding-0.6b: {endpoint: e, name: Qwen/Qwen3-Embedding-0.6B, price: {input: 0.01}}
roles:
  judge: {model: chat}
  %ROLE%
`
	tests := []struct {
		name, role, err string
		inputs          int
	}{
		{name: "bound", role: "embedder: {model: qwen3-embedding-0.6b, inputs: 32, extra: {dimensions: 256}, mode: batch}", inputs: 32},
		{name: "default inputs", role: "embedder: {model: qwen3-embedding-0.6b}"},
		{name: "inputs elsewhere", role: "respondent: {model: chat, inputs: 4}", err: "roles.respondent.inputs"},
		{name: "negative inputs", role: "embedder: {model: qwen3-embedding-0.6b, inputs: -1}", err: "roles.embedder.inputs"},
		{name: "sampling", role: "embedder: {model: qwen3-embedding-0.6b, temperature: 0}", err: "no sampling settings"},
		{name: "shared model", role: "embedder: {model: chat}", err: "give the embedder its own entry"},
		{name: "unknown key", role: "embedder: {model: qwen3-embedding-0.6b, batch_size: 8}", err: "batch_size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(strings.Replace(base, "%ROLE%", tc.role, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path, func(string) string { return "" })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Load: %v, want an error naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := Model(cfg, func(string) string { return "" }, false, 0)
			b := m.Options.Roles[llm.EmbedderRole]
			if b.Endpoint != "qwen3-embedding-0.6b" || b.Inputs != tc.inputs {
				t.Fatalf("binding %+v", b)
			}
			c, err := llm.New(*m.Options)
			if err != nil {
				t.Fatal(err)
			}
			if !c.HasEmbedder("") || c.BatchURL("qwen3-embedding-0.6b") != llm.EmbedURL || c.BatchURL("chat") == llm.EmbedURL {
				t.Fatal("the embedder's endpoint is not the embeddings one")
			}
		})
	}
}

func TestCompIntStitchAndUpperBound(t *testing.T) {
	base := `run: {db: run.db}
endpoints:
  e: {base_url: http://x/v1}
models:
  chat: {endpoint: e}
  emb: {endpoint: e}
roles:
  judge: {model: chat}
%EMB%
stages:
  compint: {%KEYS%}
`
	tests := []struct {
		name, emb, keys, err string
		stitch, ub           string
	}{
		{name: "defaults", keys: "target_tokens: 100"},
		{name: "topic with embedder", emb: "  embedder: {model: emb}", keys: "stitch: topic, embed_max_tokens: 512, upper_bound: injected", stitch: "topic", ub: "injected"},
		{name: "topic without embedder", keys: "stitch: topic", err: "needs the embedder role"},
		{name: "sequential", keys: "stitch: sequential, upper_bound: clean", stitch: "sequential", ub: "clean"},
		{name: "unknown stitch", keys: "stitch: random", err: "stages.compint.stitch"},
		{name: "unknown upper bound", keys: "upper_bound: loose", err: "stages.compint.upper_bound"},
		{name: "negative embed length", keys: "embed_max_tokens: -1", err: "embed_max_tokens"},
		{name: "negative embed pool", keys: "embed_pool: -1", err: "embed_pool"},
		{name: "misspelt", keys: "stich: topic", err: "stich"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			text := strings.NewReplacer("%EMB%", tc.emb, "%KEYS%", tc.keys).Replace(base)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path, func(string) string { return "" })
			if err == nil {
				ci, cerr := cfg.CompInt()
				err = cerr
				if err == nil && (ci.Stitch != tc.stitch || ci.UpperBound != tc.ub) {
					t.Fatalf("compint %+v", ci)
				}
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
