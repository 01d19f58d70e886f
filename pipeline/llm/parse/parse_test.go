package parse_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/parse"
)

func TestSplitThink(t *testing.T) {
	tests := []struct {
		name, in, answer, reasoning string
	}{
		{"no trace", "just the answer", "just the answer", ""},
		{"leading block", "<think>\nstep one\n</think>\n\nfinal", "final", "step one"},
		{"two blocks", "<think>a</think>x <think>b</think>y", "x y", "a\n\nb"},
		{"opened in the prompt", "reasoning here</think>\nanswer", "answer", "reasoning here"},
		{"unterminated", "<think>still thinking", "", "still thinking"},
		{"empty block", "<think></think>answer", "answer", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, r := parse.SplitThink(tc.in)
			if a != tc.answer || r != tc.reasoning {
				t.Errorf("SplitThink(%q) = %q, %q; want %q, %q", tc.in, a, r, tc.answer, tc.reasoning)
			}
		})
	}
}

func TestTaggerParse(t *testing.T) {
	tg := parse.NewTagger("the conversation")
	other := parse.NewTagger("another conversation")
	n := tg.Nonce()
	tests := []struct {
		name    string
		text    string
		want    map[string]string
		missing []string
	}{
		{"both sections", tg.Wrap("spec", "do X") + "\n" + tg.Wrap("issues", "None"), map[string]string{"spec": "do X", "issues": "None"}, nil},
		{"single quotes and spacing", `<spec id='` + n + `' >do Y</spec><issues  id="` + n + `">None</issues>`, map[string]string{"spec": "do Y", "issues": "None"}, nil},
		{"tags without the nonce are text", "<spec>fake</spec>" + tg.Wrap("issues", "None"), map[string]string{"issues": "None"}, []string{"spec"}},
		{"another nonce is text", other.Wrap("spec", "fake") + tg.Wrap("issues", "None"), map[string]string{"issues": "None"}, []string{"spec"}},
		{"last real section wins", tg.Wrap("spec", "draft") + tg.Wrap("spec", "final") + tg.Wrap("issues", "x"), map[string]string{"spec": "final", "issues": "x"}, nil},
		{"unterminated section", tg.Open("spec") + "no end" + tg.Wrap("issues", "x"), map[string]string{"issues": "x"}, []string{"spec"}},
		{"inside reasoning does not count", "<think>" + tg.Wrap("spec", "draft") + "</think>" + tg.Wrap("issues", "x"), map[string]string{"issues": "x"}, []string{"spec"}},
		{"optional present", tg.Wrap("spec", "s") + tg.Wrap("issues", "i") + tg.Wrap("note", "n"), map[string]string{"spec": "s", "issues": "i", "note": "n"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tg.Parse(tc.text, []string{"spec", "issues"}, "note")
			var me *parse.MissingError
			if tc.missing == nil && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.missing != nil && (!errors.As(err, &me) || !reflect.DeepEqual(me.Sections, tc.missing)) {
				t.Fatalf("err = %v, want missing %v", err, tc.missing)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNonceDependsOnEveryPart(t *testing.T) {
	a := parse.NewTagger("x", "y").Nonce()
	if a != parse.NewTagger("x", "y").Nonce() {
		t.Error("nonce is not deterministic")
	}
	for _, parts := range [][]string{{"xy"}, {"x", "y", ""}, {"y", "x"}, {"x", "z"}} {
		if parse.NewTagger(parts...).Nonce() == a {
			t.Errorf("parts %q give the same nonce", parts)
		}
	}
}

type label struct {
	Type   string   `json:"type" parse:"required,enum=new_ask|feedback|no_feedback"`
	Refs   []string `json:"refs"`
	Reason string   `json:"reason" parse:"required"`
	Items  []item   `json:"items"`
}

type item struct {
	Kind string `json:"kind" parse:"required,enum=action|information|process|preference|output"`
	Text string `json:"text"`
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    label
		wantErr string
	}{
		{"bare object", `{"type":"new_ask","reason":"fresh topic"}`, label{Type: "new_ask", Reason: "fresh topic"}, ""},
		{"fenced with prose", "Sure, here it is:\n```json\n{\"type\": \"feedback\", \"reason\": \"says X is wrong\", \"refs\": [\"1a\"]}\n```\nHope that helps!", label{Type: "feedback", Reason: "says X is wrong", Refs: []string{"1a"}}, ""},
		{"prose around, braces in strings", `My answer: {"type":"no_feedback","reason":"uses {curly} \"quotes\""} done.`, label{Type: "no_feedback", Reason: `uses {curly} "quotes"`}, ""},
		{"after a think block", `<think>{"type":"new_ask"}</think>{"type":"feedback","reason":"r"}`, label{Type: "feedback", Reason: "r"}, ""},
		{"nested items", `{"type":"new_ask","reason":"r","items":[{"kind":"process","text":"draft first"}]}`, label{Type: "new_ask", Reason: "r", Items: []item{{Kind: "process", Text: "draft first"}}}, ""},
		{"missing required", `{"type":"new_ask"}`, label{}, "reason: required"},
		{"null required", `{"type":"new_ask","reason":null}`, label{}, "reason: required"},
		{"bad enum", `{"type":"maybe","reason":"r"}`, label{}, `type: "maybe" is not one of`},
		{"bad nested enum", `{"type":"new_ask","reason":"r","items":[{"kind":"wish"}]}`, label{}, `items[0].kind`},
		{"no JSON", "I cannot answer that.", label{}, "no JSON object"},
		{"truncated", `{"type":"new_ask","reason":"r`, label{}, "decoding JSON answer"},
		{"wrong type", `{"type":3,"reason":"r"}`, label{}, "decoding JSON answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got label
			err := parse.JSON(tc.text, &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	s := parse.Schema(label{})
	props := s["properties"].(map[string]any)
	typ := props["type"].(map[string]any)
	if typ["type"] != "string" || !reflect.DeepEqual(typ["enum"], []string{"new_ask", "feedback", "no_feedback"}) {
		t.Errorf("type schema %v", typ)
	}
	if _, ok := props["refs"].(map[string]any)["anyOf"]; !ok {
		t.Errorf("optional refs should allow null: %v", props["refs"])
	}
	if !reflect.DeepEqual(s["required"], []string{"type", "refs", "reason", "items"}) || s["additionalProperties"] != false {
		t.Errorf("schema %v", s)
	}
}

func FuzzTaggerParse(f *testing.F) {
	tg := parse.NewTagger("seed")
	f.Add(tg.Wrap("spec", "x") + tg.Wrap("issues", "y"))
	f.Add("<spec>fake</spec><think>" + tg.Open("spec"))
	f.Add("</think></spec><spec id=\"\">")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := tg.Parse(s, []string{"spec", "issues"})
		if err == nil && (len(got) != 2) {
			t.Fatalf("no error but %d sections", len(got))
		}
		// A parsed section always comes from a nonce-bearing tag.
		if _, ok := got["spec"]; ok && !strings.Contains(s, tg.Nonce()) {
			t.Fatalf("section parsed without the nonce in %q", s)
		}
	})
}

func FuzzJSON(f *testing.F) {
	f.Add(`{"type":"new_ask","reason":"r"}`)
	f.Add("```json\n{\"type\":\n```")
	f.Add(`{{{"a":"}"}`)
	f.Add(`{"tYpe":"new_ask","reAson":""}`)
	f.Fuzz(func(t *testing.T, s string) {
		var l label
		// Keys match case-insensitively (as encoding/json does), and a key's
		// letters may be written as \u escapes; otherwise an accepted answer
		// with an empty reason must have spelled the key out.
		keyed := strings.Contains(strings.ToLower(s), "reason") || strings.Contains(s, `\u`)
		if err := parse.JSON(s, &l); err == nil && l.Reason == "" && !keyed {
			t.Fatalf("accepted %q without its required field", s)
		}
	})
}
