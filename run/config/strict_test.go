package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMisspeltOrMistypedSettings: every section refuses a key it has no
// setting for, naming the key's path, its line and the keys known there,
// and says what a value of the wrong kind should have been in YAML's
// words, not Go's. Each body is the whole file, so the lines are exact.
func TestMisspeltOrMistypedSettings(t *testing.T) {
	const head = "run: {db: x.db, out: out}\n" +
		"endpoints:\n" +
		"  e: {base_url: \"http://127.0.0.1:1/v1\"}\n" +
		"models:\n" +
		"  m: {endpoint: e}\n" +
		"roles:\n" +
		"  judge: {model: m}\n" // lines 1–7
	for _, tc := range []struct {
		name, body, want string
	}{
		{"top level", "strategies: [fc]\n", "line 8: strategies: unknown setting (known: batch, endpoints, export, input, lic, models, report, roles, run, stages)"},
		{"run", "stages: {}\nrun2: {}\n", "line 9: run2: unknown setting"},
		{"input filter", "input:\n  files: [a.jsonl]\n  filter: {min_turns: 2}\n", "line 10: input.filter.min_turns: unknown setting (known: dedupe, domains, drop_redacted, drop_toxic, identify_language, language, max_message_bytes, near_shingle, near_threshold, unknown_language, user_turns)"},
		{"classify", "stages:\n  classify: {annotatr: llm}\n", "line 9: stages.classify.annotatr: unknown setting (known: annotator, prompts); did you mean annotator?"},
		{"judge", "stages:\n  judge:\n    pairs: [fc:ao]\n\n    # both orders\n    ordr: both\n", "line 13: stages.judge.ordr: unknown setting"},
		{"gated reset", "stages:\n  curate:\n    strategies: [gated-reset]\n    gated_reset: {flor: 1}\n", "line 11: stages.curate.gated_reset.flor: unknown setting (known: cap, floor); did you mean floor?"},
		{"report", "report:\n  bootstrap: {resamples: 10, clustr: conversation}\n", "line 9: report.bootstrap.clustr: unknown setting (known: cluster, resamples)"},
		{"curate", "stages:\n  curate:\n    strategies: [fc]\n    from_trun: 3\n", "line 11: stages.curate.from_trun: unknown setting (known: ablation, adaptive, analyzer_retries, ao, augment, classify, constraints, encoding, filler, from_turn, gated_reset, last_turns, llm_compact, memory, on, plugins, prompts, recent_n, replay, reset, reset_template, rewrite, rewrite_variant, strategies, sum_variant)"},
		{"respond", "stages:\n  respond: {strategies: [fc], sample: 2}\n", "line 9: stages.respond.sample: unknown setting"},
		{"compint", "stages:\n  compint: {target_token: 100}\n", "line 9: stages.compint.target_token: unknown setting"},
		{"a list expected", "stages:\n  respond: {strategies: fc}\n", "line 9: stages.respond.strategies: `fc` where a list is expected"},
		{"a number expected", "report: {min_n: lots}\n", "line 8: report.min_n: `lots` where a whole number is expected"},
		{"a section expected", "stages:\n  judge: [fc]\n", "line 9: stages.judge: a list where a section of settings (key: value) is expected"},
		{"true or false", "input: {filter: {dedupe: maybe}}\n", "line 8: input.filter.dedupe: `maybe` where true, false, exact or near is expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadYAML(t, head+tc.body)
			if err == nil {
				_, _, err = cfg.Plan(func(string) string { return "" })
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant one containing %q", err, tc.want)
			}
			// The config's path is the test's temporary directory, whose
			// random part can spell anything ("compint640…" holds "int64").
			words := err.Error()
			if _, after, ok := strings.Cut(words, "run.yaml"); ok {
				words = after
			}
			for _, goWords := range []string{"struct {", "config.", "[]string", "not found in type", "int64"} {
				if strings.Contains(words, goWords) {
					t.Errorf("error %q speaks Go (%q)", err, goWords)
				}
			}
		})
	}
}

// TestFixtureConfigsStillLoad: the strict reading accepts every shipped
// config (they use merge keys, comments, flow and block styles).
func TestFixtureConfigsStillLoad(t *testing.T) {
	paths, err := filepath.Glob("../../fixtures/configs/*.yaml")
	if err != nil || len(paths) < 5 {
		t.Fatalf("fixture configs: %v %v", paths, err)
	}
	// compint-paper.yaml's production prompts are not shipped; stand-ins
	// take their place here.
	standin := func(name string) string { p, _ := filepath.Abs(filepath.Join("testdata", name)); return p }
	vars := map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
		"COMPINT_ANTHROPIC_PROMPT": standin("compint-standin-anthropic.txt"), "COMPINT_PIMONO_PROMPT": standin("compint-standin-pi-mono.tmpl")}
	env := func(k string) string { return vars[k] }
	for _, p := range paths {
		cfg, err := Load(p, env)
		if err == nil {
			_, _, err = cfg.Plan(env)
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
