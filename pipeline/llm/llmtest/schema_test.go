package llmtest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

func schemaOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const labelSchema = `{"type":"object","additionalProperties":false,"required":["type","refs","note"],
"properties":{"type":{"type":"string","enum":["new_ask","feedback"]},
"refs":{"type":"array","items":{"type":"string"}},
"note":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`

func TestCheckStrict(t *testing.T) {
	tests := []struct {
		name, schema, wantErr string
	}{
		{"strict", labelSchema, ""},
		{"not an object", `{"type":"string"}`, "top level must be an object"},
		{"extra properties allowed", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, "additionalProperties must be false"},
		{"optional property", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]}`, "(root).b: every property must be required"},
		{"required unknown", `{"type":"object","additionalProperties":false,"properties":{},"required":["a"]}`, "not a property"},
		{"no type", `{"type":"object","additionalProperties":false,"properties":{"a":{}},"required":["a"]}`, "(root).a: type"},
		{"array without items", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array"}},"required":["a"]}`, "needs items"},
		{"nested loose object", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","items":{"type":"object","properties":{}}}},"required":["a"]}`, "(root).a[]: additionalProperties"},
		{"empty enum", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","enum":[]}},"required":["a"]}`, "non-empty"},
		{"enum of wrong type", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","enum":[1]}},"required":["a"]}`, "not of type string"},
		{"duplicate enum", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","enum":["x","x"]}},"required":["a"]}`, "twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := llmtest.CheckStrict(schemaOf(t, tc.schema))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestConforms(t *testing.T) {
	s := schemaOf(t, labelSchema)
	tests := []struct {
		name, doc, wantErr string
	}{
		{"ok", `{"type":"new_ask","refs":["1a"],"note":null}`, ""},
		{"ok with note", `{"type":"feedback","refs":[],"note":"n"}`, ""},
		{"missing", `{"type":"new_ask","refs":[]}`, "(root).note: required"},
		{"extra", `{"type":"new_ask","refs":[],"note":null,"x":1}`, "(root).x: not a property"},
		{"enum", `{"type":"maybe","refs":[],"note":null}`, "not in the enum"},
		{"item type", `{"type":"new_ask","refs":[1],"note":null}`, "(root).refs[0]"},
		{"not JSON", `<answer id="1">{}</answer>`, "not JSON"},
		{"trailing", `{"type":"new_ask","refs":[],"note":null} more`, "text after"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := llmtest.Conforms(s, tc.doc)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// The server refuses schemas a strict endpoint would refuse, and a scripted
// reply that breaks the request's schema is a 400 naming the problem.
func TestServerChecksSchemas(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{})
	s.Reply("json please", `{"type":"new_ask","refs":[],"note":null}`)
	s.Reply("tags please", `<answer id="x">{}</answer>`)
	req := func(last, schema string, strict bool) string {
		rf, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "label", "strict": strict, "schema": json.RawMessage(schema)}})
		return `{"model":"m","messages":[{"role":"user","content":"` + last + `"}],"response_format":` + string(rf) + `}`
	}
	loose := `{"type":"object","properties":{"a":{"type":"string"}}}`
	codes := []int{
		post(t, s.URL, req("json please", labelSchema, true)),
		post(t, s.URL, req("json please", loose, true)),
		post(t, s.URL, req("json please", labelSchema, false)),
		post(t, s.URL, req("tags please", labelSchema, true)),
		post(t, s.URL, `{"model":"m","messages":[{"role":"user","content":"tags please"}]}`),
	}
	if want := []int{200, 400, 400, 400, 200}; !equal(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	calls := s.Calls()
	for i, want := range []string{"", "additionalProperties", "strict is not true", "breaks the request's schema", ""} {
		if got := calls[i].SchemaError; (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("call %d: SchemaError %q, want %q", i, got, want)
		}
	}
	if sc, ok := calls[0].Request.Schema(); !ok || sc.Name != "label" || !sc.Strict {
		t.Errorf("Schema() = %+v, %v", sc, ok)
	}
	if _, ok := calls[4].Request.Schema(); ok {
		t.Error("a request without response_format has a schema")
	}
}

func equal(a, b []int) bool {
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

func TestUnenforcedServerPassesRepliesThrough(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{Unenforced: true})
	s.Reply("q", `not JSON at all`)
	rf, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "label", "strict": true, "schema": json.RawMessage(labelSchema)}})
	if code := post(t, s.URL, `{"model":"m","messages":[{"role":"user","content":"q"}],"response_format":`+string(rf)+`}`); code != 200 {
		t.Errorf("status %d", code)
	}
	loose := `{"type":"object","properties":{}}`
	rf, _ = json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "label", "strict": true, "schema": json.RawMessage(loose)}})
	if code := post(t, s.URL, `{"model":"m","messages":[{"role":"user","content":"q"}],"response_format":`+string(rf)+`}`); code != 400 {
		t.Errorf("a loose schema: status %d, want 400 even unenforced", code)
	}
}
