package prompt_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/prompt"
)

// FuzzParseFile checks what ParseFile promises for any file: it never
// panics, and a template it accepts renders without reaching a field it was
// not given (the errors text/template gives for that cannot happen), and
// without showing the contract or a withheld field's value.
func FuzzParseFile(f *testing.F) {
	for _, seed := range []string{
		"{{range .Messages}}{{.Content}}{{end}}",
		"version: 1\n---\n{{define \"system\"}}s{{end}}{{define \"user\"}}{{range $i, $m := .Messages}}{{add $i 1}} {{$m.Role}}{{end}}{{end}}",
		"{{with .Messages}}{{range .}}{{.Role}}{{end}}{{end}}{{.Turn}}",
		"{{define \"m\"}}{{.Content}}{{end}}{{range .Messages}}{{template \"m\" .}}{{end}}",
		"{{printf \"%v\" .}}{{range .Messages}}{{end}}",
		"{{index .Messages 0}}{{.Answer}}",
		"{{range .Messages}}{{$.Nonce}}{{end}}{{index . \"Turn\"}}",
		"{{.Secret}}{{.Transcript}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tm, err := prompt.ParseFile(testSpec(), "f.tmpl", []byte(text))
		if err != nil {
			return
		}
		msgs, err := tm.RenderAnswer(sample(), contractText)
		if err != nil {
			for _, reach := range []string{"can't evaluate field", "map has no entry", "nil data", "no such template", "but has arguments", "can't give argument"} {
				if strings.Contains(err.Error(), reach) {
					t.Fatalf("an accepted template failed to render: %v\n%s", err, text)
				}
			}
			return
		}
		out := prompttestFormat(msgs)
		for _, hidden := range []string{answerLayout, secretValue} {
			if strings.Contains(out, hidden) && !strings.Contains(text, hidden) {
				t.Fatalf("an accepted template showed %q:\n%s", hidden, text)
			}
		}
	})
}
