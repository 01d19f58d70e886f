package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

func TestModelOutput(t *testing.T) {
	tests := []struct {
		name      string
		endpoints string
		models    string
		want      map[string]parse.Output // model → output the client uses
		wantErr   string
	}{
		{"no kind keeps tags", `e: {base_url: "http://127.0.0.1:1/v1"}`, `m: {endpoint: e}`, map[string]parse.Output{"m": parse.Tags}, ""},
		{"vllm kind", `e: {base_url: "http://127.0.0.1:1/v1", kind: vllm}`, `m: {endpoint: e}`, map[string]parse.Output{"m": parse.JSONSchema}, ""},
		{"openrouter kind", `e: {base_url: "http://127.0.0.1:1/v1", kind: openrouter}`, `m: {endpoint: e}`, map[string]parse.Output{"m": parse.Tags}, ""},
		{"endpoint output over kind", `e: {base_url: "http://127.0.0.1:1/v1", kind: ollama, output: tags}`, `m: {endpoint: e}`, map[string]parse.Output{"m": parse.Tags}, ""},
		{"model output over endpoint", `e: {base_url: "http://127.0.0.1:1/v1", kind: openai}`, "m: {endpoint: e, output: tags}\n  n: {endpoint: e}", map[string]parse.Output{"m": parse.Tags, "n": parse.JSONSchema}, ""},
		{"bad kind", `e: {base_url: "http://127.0.0.1:1/v1", kind: lmstudio}`, `m: {endpoint: e}`, nil, "endpoints.e.kind"},
		{"bad endpoint output", `e: {base_url: "http://127.0.0.1:1/v1", output: json}`, `m: {endpoint: e}`, nil, "endpoints.e.output"},
		{"bad model output", `e: {base_url: "http://127.0.0.1:1/v1"}`, `m: {endpoint: e, output: xml}`, nil, "models.m.output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "run.yaml")
			body := "run: {db: x.db}\nendpoints:\n  " + tc.endpoints + "\nmodels:\n  " + tc.models + "\n"
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(p, func(string) string { return "" })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := Model(cfg, func(string) string { return "" }, false, 0)
			roles := map[string]llm.RoleBinding{}
			for name := range tc.want {
				roles[name] = llm.RoleBinding{Endpoint: name}
			}
			m.Options.Roles = roles
			c, err := llm.New(*m.Options)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if got := c.Output(name); got != want {
					t.Errorf("model %s: output %q, want %q", name, got, want)
				}
			}
		})
	}
}
