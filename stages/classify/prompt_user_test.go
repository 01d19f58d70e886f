package classify_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/pollution"
)

const ownWords = "../../fixtures/prompts/classify-own-words.tmpl"

func ownPrompt(t *testing.T, path string) *prompt.Template {
	t.Helper()
	tm, err := prompt.LoadFile(classify.PromptSpec(), path)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// The shipped prompt passes the declaration users' templates are checked
// against.
func TestShippedPromptMeetsItsDeclaration(t *testing.T) {
	if err := prompt.Check(classify.Prompt(), classify.PromptSpec()); err != nil {
		t.Fatal(err)
	}
}

func TestUserPromptGolden(t *testing.T) {
	a := &classify.LLM{Template: ownPrompt(t, ownWords)}
	msgs, err := a.Messages(annotatortest.Sample(), 2)
	if err != nil {
		t.Fatal(err)
	}
	prompttest.Golden(t, "testdata/golden/own-words-turn2.txt", msgs)
}

var anyNonce = regexp.MustCompile(`<answer id="([0-9a-f]+)">`)

// A replaced prompt is exactly what the endpoint receives, with ac3's
// answer form after it, and the answer is read as with ours.
func TestUserPromptIsWhatTheEndpointReceives(t *testing.T) {
	const good = `{"type":"feedback","confidence":0.8,"reason":"names the bug","refs":["1a"]}`
	for _, out := range []parse.Output{parse.Tags, parse.JSONSchema} {
		t.Run(string(out), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
				if _, ok := r.Schema(); ok {
					return llmtest.Reply{Content: good}
				}
				m := anyNonce.FindStringSubmatch(r.Last())
				if m == nil {
					return llmtest.Reply{Content: "no answer form in the user message"}
				}
				return llmtest.Reply{Content: annotatortest.Answer(m[1], good)}
			}})
			a := &classify.LLM{Client: annotatortest.OutputClient(t, srv, out), Template: ownPrompt(t, ownWords)}
			want, err := a.Messages(annotatortest.Sample(), 2)
			if err != nil {
				t.Fatal(err)
			}
			u, err := a.Unit(annotatortest.Context(t), annotatortest.Sample(), 2)
			if err != nil {
				t.Fatal(err)
			}
			if u.Failed || !strings.Contains(string(u.Output), `"feedback"`) {
				t.Fatalf("unit %+v", u)
			}
			calls := srv.Calls()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			got := calls[0].Request.Messages
			if len(got) != len(want) {
				t.Fatalf("sent %d messages, rendered %d", len(got), len(want))
			}
			for i := range got {
				if got[i].Role != string(want[i].Role) || got[i].Content != want[i].Content {
					t.Errorf("message %d sent\n%s\nrendered\n%s", i, got[i].Content, want[i].Content)
				}
			}
			sys, user := got[0].Content, got[1].Content
			if !strings.HasPrefix(sys, "You sort the messages people send") || strings.Contains(sys+user, "You annotate conversations") {
				t.Errorf("not the user's prompt:\n%s\n%s", sys, user)
			}
			form := "Reply with exactly one section, opened and closed with these tags, holding one JSON object:"
			if out == parse.JSONSchema {
				form = "Reply with exactly one JSON object of this shape:"
				if _, ok := calls[0].Request.Schema(); !ok {
					t.Error("no schema sent with json_schema output")
				}
			}
			if !strings.Contains(user, "\n\n"+form+"\n") {
				t.Errorf("the answer's form is not at the end of the user message:\n%s", user)
			}
		})
	}
}

// The version changes with the template's bytes, so a changed prompt
// never matches the units of another.
func TestUserPromptVersion(t *testing.T) {
	text, err := os.ReadFile(ownWords)
	if err != nil {
		t.Fatal(err)
	}
	shipped := (&classify.LLM{}).Version()
	seen := map[string]bool{shipped: true}
	for _, body := range [][]byte{text, append(append([]byte(nil), text...), '\n'), []byte(strings.Replace(string(text), "You sort", "You classify", 1))} {
		tm, err := prompt.ParseFile(classify.PromptSpec(), "mine.tmpl", body)
		if err != nil {
			t.Fatal(err)
		}
		v := (&classify.LLM{Template: tm}).Version()
		if seen[v] || !strings.HasPrefix(v, "classify@user+") {
			t.Errorf("version %q (seen: %v)", v, seen)
		}
		seen[v] = true
	}
}

func TestStageRefusesAnotherStagesPrompt(t *testing.T) {
	tm, err := prompt.ParseFile(pollution.PromptSpec(), "p.tmpl", []byte("{{range .Messages}}{{.Content}}{{end}}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := classify.NewStage(classify.Options{LLM: &classify.LLM{Template: tm}}); err == nil || !strings.Contains(err.Error(), "pollution prompt") {
		t.Fatalf("err = %v", err)
	}
}

// The README's worked example quotes this template's version; it must be
// the one the fixture really has.
func TestReadmeQuotesTheExamplesVersion(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	v := ownPrompt(t, ownWords).Version()
	if !strings.Contains(string(readme), "(version "+v+";") {
		t.Errorf("README.md does not quote the example's version %s", v)
	}
}
