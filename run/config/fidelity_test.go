package config

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

func TestCurateFidelityKeys(t *testing.T) {
	cfg := configFrom(t, writeConfig(t, "x.db", `  curate:
    strategies: [ao, gated-reset, rewrite]
    ao: {placeholder: "[Response provided]", note: "Placeholders mark answered turns."}
    reset_template: wildchat
    rewrite_variant: paper
    replay: prefix
    sum_variant: paper`))
	cu, err := cfg.Curate()
	if err != nil {
		t.Fatal(err)
	}
	s := cu.AC3
	if s.AO.Placeholder != curate.HuangPlaceholder || s.AO.Note != "Placeholders mark answered turns." ||
		s.ResetTemplate != curate.ResetWildChat || s.Rewrite != analyze.RewritePaper || s.Replay != curate.ReplayPrefix || s.Sum != curate.SumPaper {
		t.Errorf("settings from config: %+v", s)
	}

	huang := configFrom(t, writeConfig(t, "x.db", "  curate:\n    strategies: [ao]\n    ao: huang"))
	if cu, err := huang.Curate(); err != nil || cu.AC3.AO != curate.HuangAO() {
		t.Errorf("ao: huang gave %+v, %v", cu.AC3.AO, err)
	}

	def := configFrom(t, writeConfig(t, "x.db", "  curate: {strategies: [ao]}"))
	if cu, err := def.Curate(); err != nil || cu.AC3.AO != (curate.AOOptions{}) ||
		cu.AC3.ResetTemplate != curate.ResetAC3 || cu.AC3.Rewrite != analyze.RewriteAC3 || cu.AC3.Replay != curate.ReplayContinue || cu.AC3.Sum != curate.SumAC3 {
		t.Errorf("defaults: %+v, %v", cu.AC3, err)
	}

	for key, body := range map[string]string{
		"stages.curate.ao":              `ao: {placeholder: "  "}`,
		"stages.curate.ao: \"hunag\"":   "ao: hunag",
		"stages.curate.ao.placehoder":   "ao: {placehoder: x}",
		"stages.curate.reset_template":  "reset_template: huang",
		"stages.curate.rewrite_variant": "rewrite_variant: short",
		"stages.curate.replay":          "replay: rollout",
		"stages.curate.sum_variant":     "sum_variant: long",
	} {
		cfg := configFrom(t, writeConfig(t, "x.db", "  curate:\n    strategies: [ao]\n    "+body))
		if _, err := cfg.Curate(); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want one naming the key", body, err)
		}
	}
}
