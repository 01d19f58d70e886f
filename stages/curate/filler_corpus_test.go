package curate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

func shippedCorpus(t *testing.T, name string) *curate.FillerCorpus {
	t.Helper()
	c, err := curate.LoadFillerCorpus(filepath.Join("..", "..", "fixtures", "filler", name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Corpus filler: each reply becomes a cut of corpus text (code for the
// reply holding code, with code-messages) about as long in tokens, the
// same in every turn and every run, with the original's role; user turns
// stay.
func TestFillerFromCorpora(t *testing.T) {
	text, code := shippedCorpus(t, "text.jsonl"), shippedCorpus(t, "python.jsonl")
	if text.Passages() != 20 || code.Passages() != 12 {
		t.Fatalf("corpora of %d and %d passages, want 20 and 12", text.Passages(), code.Passages())
	}
	prose := strings.Repeat("Sure, here is a longer explanation of the idea you asked about. ", 12)
	c := build("corpus-1", "",
		"user", "Explain it.", "assistant", prose,
		"user", "Show code.", "assistant", "Here:\n```python\nprint('hi')\n```\nThat prints hi.",
		"user", "Thanks.")
	s, err := curate.ByName("filler", curate.Options{Filler: curate.FillerOptions{Text: text, Code: code}})
	if err != nil {
		t.Fatal(err)
	}
	first, again := curateAll(t, s, c, 1), curateAll(t, s, c, 1)
	last := first[len(first)-1]
	msgs := curated.Materialize(c, last.Parts)
	if len(msgs) != 5 {
		t.Fatalf("%d messages, want 5", len(msgs))
	}
	cnt := counter(t)
	for i, m := range c.Messages {
		got := msgs[i]
		if got.Role != m.Role {
			t.Errorf("message %d: role %s, want %s", i, got.Role, m.Role)
		}
		if m.Role == conv.User {
			if got.Content != m.Content {
				t.Errorf("user message %d changed", i)
			}
			continue
		}
		if got.Content == m.Content {
			t.Errorf("reply %d kept", i)
		}
		want, have := cnt.Count(m.Content), cnt.Count(got.Content)
		if d := have - want; d < -3 || d > 3 {
			t.Errorf("reply %d: %d tokens of filler for %d", i, have, want)
		}
	}
	if !strings.Contains(msgs[1].Content, " ") || strings.Contains(msgs[1].Content, "def ") {
		t.Errorf("the prose reply's filler is not prose: %q", msgs[1].Content)
	}
	if !strings.Contains(msgs[3].Content, "\n") || !containsAny(msgs[3].Content, "def ", "import ", "class ", "return", "for ", "=") {
		t.Errorf("the code reply's filler is not code: %q", msgs[3].Content)
	}
	am := curated.Materialize(c, again[len(again)-1].Parts)
	if am[1].Content != msgs[1].Content || am[3].Content != msgs[3].Content {
		t.Error("corpus filler differs between runs")
	}
	// Turn 2's context uses the same filler for reply 1 as turn 3's.
	if m2 := curated.Materialize(c, first[1].Parts); m2[1].Content != msgs[1].Content {
		t.Error("reply 1's filler differs between turns")
	}

	base := mustStrategy(t, "filler").Version()
	vs := map[string]bool{base: true, s.Version(): true}
	other, _ := curate.ByName("filler", curate.Options{Filler: curate.FillerOptions{Text: text, Code: code, CodeWhen: curate.CodeFillerNever}})
	textOnly, _ := curate.ByName("filler", curate.Options{Filler: curate.FillerOptions{Text: text}})
	vs[other.Version()], vs[textOnly.Version()] = true, true
	if len(vs) != 4 {
		t.Errorf("versions do not tell the settings apart: %v", vs)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func TestFillerCorpusFormsAndErrors(t *testing.T) {
	plain, err := curate.ParseFillerCorpus(strings.NewReader("one passage\nstill one\n\n\n\ntwo\n"), "p.txt", false)
	if err != nil || plain.Passages() != 2 {
		t.Fatalf("plain text: %v, %v", plain, err)
	}
	same, _ := curate.ParseFillerCorpus(strings.NewReader("one passage\nstill one\n\ntwo"), "q.txt", false)
	if same.Hash() != plain.Hash() {
		t.Error("the hash depends on blank lines between passages, not on the passages")
	}
	for _, c := range []struct{ name, in, want string }{
		{"empty", "\n\n", "no passages"},
		{"no field", `{"body": "x"}`, `line 1: no "text" or "content" field`},
		{"bad json", `{"text": `, "line 1: not a JSON object"},
	} {
		_, err := curate.ParseFillerCorpus(strings.NewReader(c.in), "c.jsonl", c.name != "empty")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	text := plain
	for _, o := range []curate.FillerOptions{
		{CodeWhen: "sometimes"},
		{Text: text, CodeWhen: curate.CodeFillerAlways},
		{Code: text},
	} {
		if _, err := curate.ByName("filler", curate.Options{Filler: o}); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := curate.LoadFillerCorpus(filepath.Join(t.TempDir(), "none.jsonl")); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("a missing corpus: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

func FuzzParseFillerCorpus(f *testing.F) {
	f.Add("a\n\nb", false)
	f.Add(`{"text": "x"}`+"\n"+`{"content": "y"}`, true)
	f.Fuzz(func(t *testing.T, s string, jsonl bool) {
		c, err := curate.ParseFillerCorpus(strings.NewReader(s), "f", jsonl)
		if err == nil && c.Passages() == 0 {
			t.Fatal("a corpus without passages")
		}
	})
}
