package run_test

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/filter"
)

const languages = "../fixtures/languages/"

// TestLanguageFiltersEveryFormat runs --language over inputs of every format
// that has no language field, through the three paths that read inputs:
// the dry run's estimate, ingest (and status), and convert. All three must
// keep the same conversations; the kept ones say where their language came
// from.
func TestLanguageFiltersEveryFormat(t *testing.T) {
	english := []string{"English"}
	tests := []struct {
		name   string
		file   string
		filter run.Filter
		kept   map[string]string // id → language
		ident  int               // how many of the kept had it identified
	}{
		{name: "ShareGPT lines", file: "sharegpt.jsonl", filter: run.Filter{Languages: english},
			kept: map[string]string{"sg-en": "English", "sg-digits": ""}, ident: 1},
		{name: "ShareGPT array", file: "sharegpt.json", filter: run.Filter{Languages: english},
			kept: map[string]string{"sg-en": "English", "sg-digits": ""}, ident: 1},
		{name: "ShareGPT, unknown dropped", file: "sharegpt.jsonl", filter: run.Filter{Languages: english, UnknownLanguage: filter.UnknownDrop},
			kept: map[string]string{"sg-en": "English"}, ident: 1},
		{name: "ShareGPT, several languages by code", file: "sharegpt.jsonl", filter: run.Filter{Languages: []string{"zh", "ru", "fr"}},
			kept: map[string]string{"sg-zh": "Chinese", "sg-ru": "Russian", "sg-fr-user": "French", "sg-digits": ""}, ident: 3},
		{name: "OpenAI chat", file: "openai.jsonl", filter: run.Filter{Languages: english},
			kept: map[string]string{"oa-en": "English"}, ident: 1},
		{name: "OpenAI chat, German and Japanese", file: "openai.jsonl", filter: run.Filter{Languages: []string{"German", "Japanese"}},
			kept: map[string]string{"oa-de": "German", "oa-ja": "Japanese"}, ident: 2},
		{name: "Lost in Conversation", file: "lic.json", filter: run.Filter{Languages: []string{"Spanish"}},
			kept: map[string]string{"sharded-GSM8K/435-es": "Spanish"}, ident: 1},
		{name: "canonical: the input's field wins by default", file: "canonical.jsonl", filter: run.Filter{Languages: english},
			kept: map[string]string{"cn-input": "English"}},
		{name: "canonical: identified anyway", file: "canonical.jsonl", filter: run.Filter{Languages: []string{"Spanish", "French"}, IdentifyLanguage: filter.IdentifyAlways},
			kept: map[string]string{"cn-input": "Spanish", "cn-fr": "French"}, ident: 2},
		{name: "canonical: a recorded identification is kept", file: "canonical.jsonl", filter: run.Filter{Languages: []string{"Italian"}},
			kept: map[string]string{"cn-identified": "Italian"}, ident: 1},
		{name: "never identify: the filter passes what it cannot check", file: "openai.jsonl", filter: run.Filter{Languages: english, IdentifyLanguage: filter.IdentifyNever},
			kept: map[string]string{"oa-en": "", "oa-de": "", "oa-ja": "", "oa-pt": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			in := &run.Ingest{Files: []string{filepath.Join(languages, tt.file)}, Format: "auto", MaxLineBytes: 1 << 20, Filter: tt.filter}
			plan := run.Plan{DB: filepath.Join(dir, "run.db"), Ingest: in}

			fc, err := run.Estimate(ctx(t), plan)
			if err != nil {
				t.Fatal(err)
			}
			if fc.Conversations != int64(len(tt.kept)) {
				t.Errorf("the dry run counts %d conversations, want %d", fc.Conversations, len(tt.kept))
			}

			if _, err := run.Execute(ctx(t), plan, run.Options{}); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.Open(ctx(t), plan.DB, ledger.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			st, err := l.Status(ctx(t))
			l.Close()
			if err != nil {
				t.Fatal(err)
			}
			var counted, identified int64
			for _, lc := range st.Languages {
				counted += lc.Conversations
				identified += lc.Identified
			}
			if st.Conversations != int64(len(tt.kept)) || counted != st.Conversations || identified != int64(tt.ident) {
				t.Errorf("ingest kept %d conversations, status counts %d by language (%d identified): %+v; want %d (%d identified)",
					st.Conversations, counted, identified, st.Languages, len(tt.kept), tt.ident)
			}

			out := filepath.Join(dir, "out.jsonl")
			if _, err := run.Convert(ctx(t), run.Conversion{Files: in.Files, Format: in.Format, MaxLineBytes: in.MaxLineBytes, Filter: tt.filter, Out: out}, nil); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			var ident int
			for _, c := range readCanonical(t, out) {
				got[c.ID] = c.Language
				switch {
				case c.Language == "" && (c.LanguageSource != "" || c.LanguageDetector != ""):
					t.Errorf("%s: no language, yet source %q detector %q", c.ID, c.LanguageSource, c.LanguageDetector)
				case c.LanguageSource == conv.LanguageIdentified:
					ident++
					if c.LanguageDetector == "" || c.LanguageConfidence <= 0 || c.LanguageConfidence > 1 {
						t.Errorf("%s: identified by %q with confidence %v", c.ID, c.LanguageDetector, c.LanguageConfidence)
					}
				case c.Language != "" && c.LanguageSource != conv.LanguageFromInput:
					t.Errorf("%s: language %q from %q", c.ID, c.Language, c.LanguageSource)
				}
			}
			if !maps.Equal(got, tt.kept) || ident != tt.ident {
				t.Errorf("convert kept %v (%d identified), want %v (%d)", got, ident, tt.kept, tt.ident)
			}
		})
	}
}

func readCanonical(t *testing.T, path string) []conv.Conversation {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []conv.Conversation
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c conv.Conversation
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
