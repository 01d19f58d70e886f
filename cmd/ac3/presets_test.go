package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/stages/curate"
)

// presetConfig copies a preset into dir with the run moved there and the
// input paths made absolute.
func presetConfig(t *testing.T, dir, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../../fixtures/configs", name))
	if err != nil {
		t.Fatal(err)
	}
	fixtures, _ := filepath.Abs("../../fixtures")
	text := strings.ReplaceAll(string(raw), "../../runs/", dir+"/")
	for _, sub := range []string{"wildchat", "lic"} {
		text = strings.ReplaceAll(text, "../"+sub+"/", fixtures+"/"+sub+"/")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The paper presets load, say in their dry run what they will do, and run
// to the end against the scripted endpoint with no failed unit; the
// settings that follow a paper reach the strategies' versions (so the run's
// unit keys).
func TestPaperPresetsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three presets end to end")
	}
	tests := []struct {
		file string
		// versions: a strategy and a part its recorded version must hold.
		versions map[string]string
		// gates: an AC3 operator and its floor and cap.
		gates map[string]curate.Gate
	}{
		{"ac3-wildchat.yaml",
			map[string]string{"gated-reset": "reset=wildchat", "reset": "replay=prefix", "rewrite": ";replay=prefix", "ao": "1+"},
			map[string]curate.Gate{"gated-reset": {Floor: 1, Cap: 3}, "reset": {}}},
		{"huang-wildchat.yaml", map[string]string{"ao": "1+"}, nil},
		{"ac3-lic.yaml",
			map[string]string{"ao": "1+"},
			map[string]curate.Gate{"gated-reset": {Floor: 2, Cap: 3}, "reset": {}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			srv := startScripted(t)
			dir := t.TempDir()
			path := presetConfig(t, dir, tc.file)
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL, "VLLM_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test"}

			cfg, err := config.Load(path, func(k string) string { return vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			cu, err := cfg.Curate()
			if err != nil {
				t.Fatal(err)
			}
			if cu.AC3.AO != curate.HuangAO() {
				t.Errorf("ao strings %+v, want Huang et al.'s", cu.AC3.AO)
			}
			for op, want := range tc.gates {
				if got := cu.AC3.Gates[op]; got != want {
					t.Errorf("%s gate %+v, want %+v", op, got, want)
				}
			}

			plan, err := runAppEnv(t, vars, "run", "--config", path, "--dry-run")
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, plan)
			}
			for _, s := range cu.Strategies {
				if !strings.Contains(plan, s) {
					t.Errorf("the dry run does not mention %s:\n%s", s, plan)
				}
			}
			if strings.Contains(plan, "skipping") {
				t.Errorf("the dry run skips something:\n%s", plan)
			}

			out, err := runAppEnv(t, vars, "run", "--config", path)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			ctx := context.Background()
			l, err := ledger.Open(ctx, cfg.Run.DB, ledger.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			st, err := l.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			done := map[string]int64{}
			for _, s := range st.Stages {
				done[s.Stage] += s.UnitsDone
				if s.Failed > 0 || s.UnitsFailed > 0 {
					t.Errorf("%s %s: %d tasks, %d units failed", s.Stage, s.Variant, s.Failed, s.UnitsFailed)
				}
			}
			for _, stage := range []string{"curate", "respond", "judge"} {
				if cfg.Stages.Judge.Kind == 0 && stage != "curate" {
					continue
				}
				if done[stage] == 0 {
					t.Errorf("stage %s did no work:\n%s", stage, out)
				}
			}
			plans, err := l.Plans(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, v := range plans[curate.StageName] {
				got[v.Name] = v.Version
			}
			for name, part := range tc.versions {
				if !strings.Contains(got[name], part) {
					t.Errorf("%s recorded version %q, want it to hold %q", name, got[name], part)
				}
			}
		})
	}
}
