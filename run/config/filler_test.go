package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stages.curate.filler reads its corpora relative to the config's folder
// and refuses what it cannot use.
func TestFillerConfig(t *testing.T) {
	p := writeConfig(t, "x.db", "  curate:\n    strategies: [fc, filler]\n    filler: {text_corpus: text.jsonl, code_corpus: code.jsonl, code_when: always}")
	dir := filepath.Dir(p)
	for name, body := range map[string]string{"text.jsonl": `{"text": "Rivers run to the sea."}`, "code.jsonl": `{"content": "x = 1"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ac, err := configFrom(t, p).AC3()
	if err != nil {
		t.Fatal(err)
	}
	if ac.Filler.Text == nil || ac.Filler.Code == nil || ac.Filler.Text.Passages() != 1 || ac.Filler.CodeWhen != "always" {
		t.Errorf("filler options %+v", ac.Filler)
	}
	for _, c := range []struct{ stages, want string }{
		{"    filler: {text_corpus: missing.jsonl}", "stages.curate.filler.text_corpus"},
		{"    filler: {text_corpus: text.jsonl, code_when: often}", "stages.curate.filler: filler code_when"},
		{"    filler: {text_corpus: text.jsonl, corpus: x}", "corpus"},
	} {
		p := writeConfig(t, "x.db", "  curate:\n    strategies: [filler]\n"+c.stages)
		os.WriteFile(filepath.Join(filepath.Dir(p), "text.jsonl"), []byte(`{"text": "a"}`+"\n"), 0o644)
		cfg, err := Load(p, func(string) string { return "" })
		if err == nil {
			_, err = cfg.AC3()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.stages, err, c.want)
		}
	}
}
