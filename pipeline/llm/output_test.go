package llm_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

func TestDefaultOutput(t *testing.T) {
	for kind, want := range map[string]parse.Output{
		"openai": parse.JSONSchema, "azure": parse.JSONSchema, "vllm": parse.JSONSchema,
		"llamacpp": parse.JSONSchema, "ollama": parse.JSONSchema,
		"openrouter": parse.Tags, "other": parse.Tags, "": parse.Tags,
	} {
		if got := llm.DefaultOutput(kind); got != want {
			t.Errorf("DefaultOutput(%q) = %q, want %q", kind, got, want)
		}
		if err := llm.CheckKind(kind); err != nil {
			t.Errorf("CheckKind(%q): %v", kind, err)
		}
	}
	if llm.CheckKind("lmstudio") == nil {
		t.Error("an unknown kind was accepted")
	}
}

// The role's Output comes from the endpoint (or its kind), and a request
// with a schema sends it as a strict json_schema only when the output is
// json_schema, whatever the endpoint's json_mode.
func TestOutputAndSchemaRequests(t *testing.T) {
	type label struct {
		Type string `json:"type" parse:"required,enum=a|b"`
	}
	schema := &llm.Schema{Name: "label", Schema: parse.Schema(label{})}
	tests := []struct {
		name   string
		kind   string
		output parse.Output
		want   parse.Output
		format string // response_format.type sent, "" for none
	}{
		{"no kind", "", "", parse.Tags, ""},
		{"vllm kind", "vllm", "", parse.JSONSchema, "json_schema"},
		{"openrouter kind", "openrouter", "", parse.Tags, ""},
		{"set over the kind", "vllm", parse.Tags, parse.Tags, ""},
		{"set without a kind", "", parse.JSONSchema, parse.JSONSchema, "json_schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, llmtest.Options{Default: llmtest.JSON(map[string]string{"type": "a"})}, func(e *llm.Endpoint) { e.Kind, e.Output = tc.kind, tc.output }, nil)
			if got := h.client.Output("anything"); got != tc.want {
				t.Fatalf("Output = %q, want %q", got, tc.want)
			}
			ep, _ := h.client.Endpoint(llm.DefaultRole)
			if ep.Output != tc.want {
				t.Errorf("Endpoint().Output = %q", ep.Output)
			}
			req := userReq("q")
			if tc.want == parse.JSONSchema {
				req.Schema = schema
			}
			resp, err := h.client.Call(testCtx(t, 5*time.Second), req)
			if err != nil {
				t.Fatal(err)
			}
			call := h.srv.Calls()[0]
			sc, ok := call.Request.Schema()
			var rf struct{ Type string }
			if len(call.Request.ResponseFormat) > 0 {
				_ = json.Unmarshal(call.Request.ResponseFormat, &rf)
			}
			if rf.Type != tc.format || ok != (tc.format == "json_schema") {
				t.Fatalf("response_format %s", call.Request.ResponseFormat)
			}
			if ok {
				if !sc.Strict || sc.Name != "label" || call.SchemaError != "" {
					t.Errorf("schema %+v, server said %q", sc, call.SchemaError)
				}
				var l label
				if err := parse.Strict(resp.Text, &l); err != nil || l.Type != "a" {
					t.Errorf("answer %q: %v", resp.Text, err)
				}
			}
		})
	}
	if _, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "x", BaseURL: "http://127.0.0.1:1", Model: "m", Kind: "lmstudio"}}}); err == nil {
		t.Error("an unknown kind was accepted")
	}
	if _, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{{Name: "x", BaseURL: "http://127.0.0.1:1", Model: "m", Output: "json"}}}); err == nil {
		t.Error("an unknown output was accepted")
	}
}
