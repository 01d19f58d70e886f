package run

import (
	"context"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

// versions builds the curate stage of c (no run, no calls) and returns
// each strategy's version.
func versions(t *testing.T, c Curate) map[string]string {
	t.Helper()
	m := Model{Options: &llm.Options{Endpoints: []llm.Endpoint{{Name: "ep", BaseURL: "http://127.0.0.1:1/v1", Model: "m"}}}}
	client, err := m.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AC3.check(); err != nil {
		t.Fatal(err)
	}
	b, err := c.build(context.Background(), curateEnv{client: client})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, v := range b.stage.Variants() {
		out[v.Name] = v.Version
	}
	return out
}

// Each fidelity setting reaches the strategies it affects, and only
// those: their versions (so their unit keys) change, the others' stay.
func TestFidelitySettingsChangeTheVersionsOfWhatTheyAffect(t *testing.T) {
	all := []string{"fc", "ao", "reset", "gated-reset", "rewrite", "augment"}
	base := versions(t, Curate{Strategies: all})
	tests := []struct {
		name    string
		set     func(*AC3)
		changes []string
	}{
		{"huang ao", func(s *AC3) { s.AO = curate.HuangAO() }, []string{"ao"}},
		{"ao note only", func(s *AC3) { s.AO = curate.AOOptions{Note: "Placeholders mark answered turns."} }, []string{"ao"}},
		{"wildchat reset", func(s *AC3) { s.ResetTemplate = curate.ResetWildChat }, []string{"reset", "gated-reset"}},
		{"paper rewrite", func(s *AC3) { s.Rewrite = analyze.RewritePaper }, []string{"rewrite"}},
		{"prefix replay", func(s *AC3) { s.Replay = curate.ReplayPrefix }, []string{"reset", "gated-reset", "rewrite"}},
		{"defaults spelled out", func(s *AC3) {
			s.ResetTemplate, s.Rewrite, s.Replay = curate.ResetAC3, analyze.RewriteAC3, curate.ReplayContinue
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Curate{Strategies: all}
			tc.set(&c.AC3)
			got := versions(t, c)
			for _, name := range all {
				changed := got[name] != base[name]
				want := false
				for _, n := range tc.changes {
					want = want || n == name
				}
				if changed != want {
					t.Errorf("%s: version %q, default %q; changed=%v, want %v", name, got[name], base[name], changed, want)
				}
			}
		})
	}
}

func TestFidelitySettingsAreChecked(t *testing.T) {
	for name, s := range map[string]AC3{
		"blank placeholder": {AO: curate.AOOptions{Placeholder: " "}},
		"reset template":    {ResetTemplate: "huang"},
		"rewrite variant":   {Rewrite: "short"},
		"replay":            {Replay: "rollout"},
	} {
		if err := s.check(); err == nil {
			t.Errorf("%s: accepted %+v", name, s)
		}
	}
}
