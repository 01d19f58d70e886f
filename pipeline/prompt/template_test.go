package prompt_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
)

type labelData struct {
	Open, Close string
	Turns       []string
}

func TestRenderGolden(t *testing.T) {
	text, err := os.ReadFile("testdata/label.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	tm, err := prompt.Parse("label", text)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := tm.Render(labelData{Open: "<kind>", Close: "</kind>", Turns: []string{"  write a poem ", "make it shorter"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != conv.System || msgs[1].Role != conv.User {
		t.Fatalf("messages %+v", msgs)
	}
	prompttest.Golden(t, "testdata/golden/label.txt", msgs)
	if tm.Header("description") == "" || tm.Name() != "label" {
		t.Error("header not kept")
	}
}

func TestVersion(t *testing.T) {
	base := "version: 3\n---\n{{define \"user\"}}Hello {{.}}{{end}}\n"
	a := prompt.MustParse("greet", []byte(base))
	if v := a.Version(); !strings.HasPrefix(v, "greet@v3+") || len(v) != len("greet@v3+")+10 {
		t.Errorf("version %q", v)
	}
	if prompt.MustParse("greet", []byte(base)).Version() != a.Version() {
		t.Error("the same text gave two versions")
	}
	// An edit without a bump still changes the version.
	edited := prompt.MustParse("greet", []byte(strings.Replace(base, "Hello", "Hi", 1)))
	if edited.Version() == a.Version() {
		t.Error("an edited prompt kept its version")
	}
	bumped := prompt.MustParse("greet", []byte(strings.Replace(base, "version: 3", "version: 4", 1)))
	if !strings.HasPrefix(bumped.Version(), "greet@v4+") {
		t.Errorf("bumped version %q", bumped.Version())
	}
}

func TestRenderWithoutSystem(t *testing.T) {
	tm := prompt.MustParse("p", []byte("version: 1\n---\n{{define \"system\"}}  {{end}}{{define \"user\"}}\n  u {{.X}}\n{{end}}"))
	msgs, err := tm.Render(map[string]string{"X": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0] != (conv.Message{Role: conv.User, Content: "u 1"}) {
		t.Errorf("messages %+v", msgs)
	}
	if _, err := tm.Render(map[string]string{}); err == nil {
		t.Error("a missing field rendered silently")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"no separator", "version: 1\n{{define \"user\"}}x{{end}}", "no \"---\""},
		{"version not first", "name: x\nversion: 1\n---\n{{define \"user\"}}x{{end}}", "must start with \"version: N\""},
		{"version not a number", "version: three\n---\n{{define \"user\"}}x{{end}}", "not a positive integer"},
		{"zero version", "version: 0\n---\n{{define \"user\"}}x{{end}}", "not a positive integer"},
		{"bad header line", "version: 1\njunk\n---\n{{define \"user\"}}x{{end}}", "line 2"},
		{"no user section", "version: 1\n---\n{{define \"system\"}}x{{end}}", "no {{define \"user\"}}"},
		{"template syntax", "version: 1\n---\n{{define \"user\"}}{{.X{{end}}", "parsing prompt p"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prompt.Parse("p", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
