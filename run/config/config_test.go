package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, db, stages string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.yaml")
	body := fmt.Sprintf(`run: {db: %s}
endpoints:
  e: {base_url: "http://127.0.0.1:1/v1"}
models:
  m: {endpoint: e, price: {input: 1.0, output: 2.0}}
roles:
  annotator: {model: m}
stages:
%s
`, db, stages)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// configFrom loads a config the way the commands do; a config error fails
// the test.
func configFrom(t *testing.T, path string) *File {
	t.Helper()
	cfg, err := Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return cfg
}

func TestAnnotateConfigSections(t *testing.T) {
	tests := []struct {
		name, stages string
		want         string // describe(), or the error
	}{
		{"heuristic classify", "  classify: {annotator: heuristic}", "classify+refs:heuristic"},
		{"refs alone runs classify", "  refs: {annotator: llm}", "classify+refs:llm"},
		{"all", "  classify: {annotator: llm}\n  refs: {annotator: llm}\n  constraints: {annotator: heuristic}\n  pollution: {on: [dataset, generated]}", "classify+refs:llm, constraints:heuristic, pollution:llm"},
		{"refs disagree", "  classify: {annotator: llm}\n  refs: {annotator: heuristic}", "stages.refs.annotator"},
		{"bad annotator", "  constraints: {annotator: gpt}", "stages.constraints.annotator"},
		{"bad pollution target", "  pollution: {on: [everything]}", "stages.pollution.on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configFrom(t, writeConfig(t, "x.db", tc.stages))
			a, _, err := cfg.Annotate()
			got := a.Describe()
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	get := func(k string) string {
		if k == "SET" {
			return "v"
		}
		return ""
	}
	for in, want := range map[string]string{
		"${SET}":             "v",
		"${UNSET:-d}":        "d",
		"${SET:-d}":          "v",
		"$5 and ${UNSET}":    "$5 and ",
		"price: $0.25/M":     "price: $0.25/M",
		"a${SET}b${SET}c":    "avbvc",
		"${UNSET:-http://x}": "http://x",
	} {
		if got := expandEnv(in, get); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCurateConfigAC3Settings(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "run.yaml")
	yaml := `run: {db: run.db}
stages:
  curate:
    strategies: [fc, gated-reset]
    gated_reset: {floor: 1, cap: 1}
    augment: {warmup: 3}
    memory: {regime: off}
`
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(cfgPath, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := cfg.Curate()
	if err != nil {
		t.Fatal(err)
	}
	if g := a.AC3.Gates["gated-reset"]; g.Floor != 1 || g.Cap != 1 || a.AC3.Gates["augment"].Floor != 3 {
		t.Errorf("gates from config: %+v", a.AC3.Gates)
	}
	bad := strings.Replace(yaml, "memory: {regime: off}", "bogus: 1", 1)
	if err := os.WriteFile(cfgPath, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ = Load(cfgPath, func(string) string { return "" })
	if _, err := cfg.Curate(); err == nil || !strings.Contains(err.Error(), "stages.curate.bogus") {
		t.Errorf("unknown key: %v", err)
	}
}
