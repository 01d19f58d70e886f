package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// runAppEnv is runApp with environment variables.
func runAppEnv(t *testing.T, vars map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	app := newApp(&env{stop: make(chan struct{}), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }})
	err := app.RunContext(ctx, append([]string{"ac3"}, args...))
	return out.String() + errb.String(), err
}

func TestLLMPing(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{Key: "sk-test-secret",
		Default: llmtest.Reply{Content: "pong", Headers: map[string]string{"x-ratelimit-remaining-requests": "99", "x-ratelimit-limit-requests": "100"}}})
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test-secret", "OPENAI_MODEL": "m1"}
	out, err := runAppEnv(t, vars, "llm", "ping", "--role", "judge")
	if err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	for _, want := range []string{"model:    m1", "latency", "x-ratelimit-remaining-requests: 99", "pong", "output:   tags (endpoint kind: none given)"} {
		if !strings.Contains(out, want) {
			t.Errorf("ping output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-test-secret") {
		t.Error("ping printed the API key")
	}
	if srv.Count() != 1 {
		t.Errorf("ping sent %d requests", srv.Count())
	}

	// A wrong key stops with one clear line naming the variable, not the key.
	vars["OPENAI_API_KEY"] = "sk-wrong"
	out, err = runAppEnv(t, vars, "llm", "ping")
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("bad key: err = %v\n%s", err, out)
	}

	// No endpoint at all: say what to set.
	_, err = runAppEnv(t, map[string]string{}, "llm", "ping")
	if err == nil || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Errorf("no endpoint: err = %v", err)
	}
}

func TestLLMConfigRoles(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "ok"}})
	cfg := `run: {db: x.db}
endpoints:
  local: {base_url: "${BASE}", api_key_env: MY_KEY, limits: {concurrency: 2, rpm: 600}}
models:
  small: {endpoint: local, name: qwen3-8b, price: {input: 0.1, output: 0.2}}
roles:
  judge: {model: small, temperature: 0.0, max_tokens: 16}
`
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte(cfg), 0o644)
	out, err := runAppEnv(t, map[string]string{"BASE": srv.URL, "MY_KEY": "k"}, "llm", "ping", "--config", p, "--role", "judge")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Request.Model != "qwen3-8b" {
		t.Fatalf("calls = %+v", calls)
	}
	if !strings.Contains(out, "small") {
		t.Errorf("ping does not name the model entry:\n%s", out)
	}

	bad := strings.Replace(cfg, "model: small", "model: big", 1)
	os.WriteFile(p, []byte(bad), 0o644)
	if _, err := runAppEnv(t, nil, "llm", "ping", "--config", p); err == nil || !strings.Contains(err.Error(), "roles.judge.model") {
		t.Errorf("unknown model: err = %v", err)
	}
}
