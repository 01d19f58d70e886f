package prompt_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/prompt"
)

// entry and data stand in for a stage's prompt data: the material
// (Messages), a turn, a nonce, and the contract fields (Answer, JSON).
type entry struct {
	Role, Content string
}

type data struct {
	Nonce    string
	Turn     int
	Messages []entry
	Answer   string
	JSON     bool
	Secret   string // withheld
}

const (
	answerLayout = "LAYOUT-7f3a"   // the Answer field's value: never in a user's render
	contractText = "CONTRACT-91bc" // what ac3 appends
	secretValue  = "SECRET-55d0"
)

func testSpec() prompt.Spec {
	return prompt.Spec{
		Name: "label", Data: reflect.TypeFor[data](), Needs: []string{"Messages"}, Contract: []string{"Answer", "JSON"},
		Withheld: map[string]string{"Secret": "it is the answer key", "Transcript": "this step reads the user's side only"},
	}
}

func sample() data {
	return data{Nonce: "n0nce", Turn: 2, Messages: []entry{{"user", "write a poem"}, {"assistant", "roses"}}, Answer: answerLayout, JSON: true, Secret: secretValue}
}

func TestParseFileRefuses(t *testing.T) {
	const use = "{{range .Messages}}{{.Content}}{{end}}"
	tests := []struct {
		name, text string
		want       []string // all must be in the error
	}{
		{"does not parse", "Turn {{.Turn", []string{"t.tmpl:1:", "unclosed action"}},
		{"unknown function", "\n{{frobnicate .Turn}}" + use, []string{"t.tmpl:2:", "frobnicate"}},
		{"unknown field, with its line", "a\nb\n  {{.Reply}}" + use, []string{"t.tmpl:3:", "no field .Reply", ".Nonce, .Turn, .Messages"}},
		{"contract field", use + "\n\n{{.Answer}}", []string{"t.tmpl:3:", ".Answer is the answer's form"}},
		{"contract field as a condition", use + "{{if .JSON}}json{{end}}", []string{"t.tmpl:1:", ".JSON is the answer's form"}},
		{"contract field through $", "{{range .Messages}}{{$.Answer}}{{end}}", []string{".Answer is the answer's form"}},
		{"contract field through index", use + `{{index . "Answer"}}`, []string{".Answer is the answer's form"}},
		{"index needs a quoted name", use + `{{index . .Nonce}}`, []string{"field name in quotes"}},
		{"withheld field in the data", use + "{{.Secret}}", []string{"does not get .Secret: it is the answer key"}},
		{"withheld field not in the data", use + "{{.Transcript}}", []string{"does not get .Transcript: this step reads the user's side only"}},
		{"needed field left out", "Label turn {{.Turn}}.", []string{"t.tmpl:", "must show .Messages"}},
		{"field of an element", "{{range .Messages}}{{.Text}}{{end}}", []string{"no field .Text here; there is .Role, .Content"}},
		{"field of a range variable", "{{range $i, $m := .Messages}}{{$m.Bogus}}{{end}}", []string{"$m.Bogus", "no field .Bogus"}},
		{"field of a list", "{{with .Messages}}{{.Role}}{{end}}", []string{"cannot be read from a list"}},
		{"field of text", use + "{{.Nonce.Value}}", []string{"cannot be read from a text"}},
		{"range over the data", "{{range .}}{{end}}" + use, []string{"not a list"}},
		{"range over text", use + "{{range .Nonce}}{{end}}", []string{"a text is not a list"}},
		{"range over a number", use + "{{range 100000000}}x{{end}}", []string{"a number is not a list"}},
		{"recursive helper", `{{define "m"}}{{template "m" .}}{{end}}{{range .Messages}}{{template "m" .}}{{end}}`, []string{`template "m" calls itself`}},
		{"undefined template", use + `{{template "turn" .}}`, []string{`no template of that name`}},
		{"bad field in a helper template", `{{define "m"}}{{.Nope}}{{end}}{{range .Messages}}{{template "m" .}}{{end}}`, []string{"no field .Nope here"}},
		{"helper called without data", `{{define "m"}}{{.Role}}{{end}}{{range .Messages}}{{template "m"}}{{end}}`, []string{"called without data"}},
		{"unknown type read further", use + "{{(or .Turn .Nonce).X}}", []string{"cannot be known here"}},
		{"field given arguments", use + "{{.Turn 3}}", []string{"only a function takes arguments"}},
		{"helper with a wrong argument", use + "{{add .Nonce 1}}", []string{"add: argument 1 is a text"}},
		{"helper with too few arguments", use + "{{join .Messages}}", []string{"join takes 2 argument(s), not 1"}},
		{"text outside the sections", "hello\n{{define \"user\"}}" + use + "{{end}}", []string{"t.tmpl:1:", "text outside the {{define}} sections"}},
		{"no user message", "  \n {{/* nothing */}} \n", []string{"t.tmpl: no user message"}},
		{"header without its end", "version: 2\nhello " + use, []string{"t.tmpl:1:", "no \"---\" line"}},
		{"header counts in line numbers", "version: 2\ndescription: mine\n---\n" + use + "\n{{.Reply}}", []string{"t.tmpl:5:"}},
		{"bad header", "version: two\n---\n" + use, []string{"not a positive integer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prompt.ParseFile(testSpec(), "t.tmpl", []byte(tc.text))
			if err == nil {
				t.Fatal("the template was accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseFileUserOnly(t *testing.T) {
	s := testSpec()
	s.UserOnly = true
	_, err := prompt.ParseFile(s, "p.tmpl", []byte("{{define \"system\"}}be nice{{end}}{{define \"user\"}}{{range .Messages}}{{.Content}}{{end}}{{end}}"))
	if err == nil || !strings.Contains(err.Error(), "remove the \"system\" section") || !strings.Contains(err.Error(), "p.tmpl:1:") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseFileRenders(t *testing.T) {
	tests := []struct {
		name, text string
		want       []conv.Message
	}{
		{
			name: "whole file is the user message",
			text: "Label turn {{.Turn}} ({{.Nonce}}):\n{{range $i, $m := .Messages}}{{add $i 1}}. {{$m.Role}}: {{trim $m.Content}}\n{{end}}",
			want: []conv.Message{{Role: conv.User, Content: "Label turn 2 (n0nce):\n1. user: write a poem\n2. assistant: roses\n\n" + contractText}},
		},
		{
			name: "sections, a helper template and a header",
			text: "version: 4\n---\n{{define \"system\"}}You label turns.{{end}}\n{{define \"m\"}}[{{.Role}}] {{.Content}}{{end}}\n" +
				"{{define \"user\"}}{{range .Messages}}{{template \"m\" .}}\n{{end}}{{with $n := len .Messages}}{{$n}} messages{{end}}{{end}}\n",
			want: []conv.Message{{Role: conv.System, Content: "You label turns."}, {Role: conv.User, Content: "[user] write a poem\n[assistant] roses\n2 messages\n\n" + contractText}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := prompt.ParseFile(testSpec(), "mine.tmpl", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tm.RenderAnswer(sample(), contractText)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rendered\n%q\nwant\n%q", got, tc.want)
			}
			if tm.File() != "mine.tmpl" || tm.Name() != "label" {
				t.Errorf("file %q, name %q", tm.File(), tm.Name())
			}
		})
	}
}

// A user's template is rendered with the fields it may see only: even
// printing the whole data shows neither the contract nor a withheld field.
func TestUserTemplateSeesOnlyItsFields(t *testing.T) {
	tm, err := prompt.ParseFile(testSpec(), "all.tmpl", []byte(`{{printf "%v" .}} {{range .Messages}}{{.Content}}{{end}} {{.}}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := tm.RenderAnswer(sample(), contractText)
	if err != nil {
		t.Fatal(err)
	}
	text := prompttestFormat(msgs)
	for _, hidden := range []string{answerLayout, secretValue} {
		if strings.Contains(text, hidden) {
			t.Errorf("the render shows %q:\n%s", hidden, text)
		}
	}
	if !strings.HasSuffix(text, contractText) || !strings.Contains(text, "write a poem") {
		t.Errorf("render:\n%s", text)
	}
	if _, err := tm.Render(struct{ Messages []entry }{}); err == nil {
		t.Error("a user's template rendered data of another type")
	}
}

func prompttestFormat(msgs []conv.Message) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, m.Content)
	}
	return strings.Join(parts, "\n")
}

func TestUserTemplateVersion(t *testing.T) {
	const text = "{{range .Messages}}{{.Content}}{{end}}"
	a, err := prompt.ParseFile(testSpec(), "a.tmpl", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if v := a.Version(); !strings.HasPrefix(v, "label@user+") || len(v) != len("label@user+")+10 {
		t.Errorf("version %q", v)
	}
	same, _ := prompt.ParseFile(testSpec(), "elsewhere/b.tmpl", []byte(text))
	if same.Version() != a.Version() {
		t.Error("the same bytes under another file name changed the version")
	}
	for _, edit := range []string{text + " ", text + "\n", "x" + text} {
		b, err := prompt.ParseFile(testSpec(), "a.tmpl", []byte(edit))
		if err != nil {
			t.Fatal(err)
		}
		if b.Version() == a.Version() {
			t.Errorf("%q kept the version of %q", edit, text)
		}
	}
	shipped := prompt.MustParse("label", []byte("version: 1\n---\n{{define \"user\"}}"+text+"{{end}}"))
	if strings.HasPrefix(shipped.Version(), "label@user") || shipped.File() != "" {
		t.Errorf("shipped prompt looks like a user's: %q", shipped.Version())
	}
}

// A shipped prompt keeps stating its contract itself: RenderAnswer ignores
// the contract passed for user templates.
func TestShippedPromptKeepsItsContract(t *testing.T) {
	tm := prompt.MustParse("label", []byte("version: 1\n---\n{{define \"user\"}}{{range .Messages}}{{.Content}}{{end}}\n{{.Answer}}{{end}}"))
	msgs, err := tm.RenderAnswer(sample(), contractText)
	if err != nil {
		t.Fatal(err)
	}
	if got := msgs[0].Content; got != "write a poemroses\n"+answerLayout {
		t.Errorf("rendered %q", got)
	}
	if err := prompt.Check(tm, testSpec()); err != nil {
		t.Errorf("check of a shipped prompt using its contract: %v", err)
	}
	bad := prompt.MustParse("label", []byte("version: 1\n---\n{{define \"user\"}}{{.Turn}}{{end}}"))
	if err := prompt.Check(bad, testSpec()); err == nil || !strings.Contains(err.Error(), "must show .Messages") {
		t.Errorf("check of a shipped prompt without its material: %v", err)
	}
}
