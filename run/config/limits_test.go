package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
)

// loadYAML writes body as a config file and loads it.
func loadYAML(t *testing.T, body string) (*File, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p, func(string) string { return "" })
}

const limitsBase = `run: {db: x.db%s}
endpoints:
  e: {base_url: "http://127.0.0.1:1/v1", limits: {%s}}
models:
  m: {endpoint: e%s}
roles:
  judge: {model: m}
stages:
  classify: {annotator: llm}
  curate: {strategies: [fc, gated-reset]}
  respond: {strategies: [fc]}
  judge: {pairs: ["fc:ao"]}
`

func TestLimitsAndWorkersKeys(t *testing.T) {
	tests := []struct {
		name                 string
		run, endpoint, model string
		want                 llm.Limits // of model m
		workers              int
		err                  string // "" when it loads
	}{
		{name: "defaults", want: llm.Limits{}},
		{name: "all limits", endpoint: "concurrency: 16, min_concurrency: 4, rpm: 600, tpm: 90000, patience: 2h, unreachable: 5m",
			want: llm.Limits{Concurrency: 16, MinConcurrency: 4, RPM: 600, TPM: 90000, Patience: 2 * time.Hour, Unreachable: 5 * time.Minute}},
		{name: "model limits win", endpoint: "concurrency: 16, patience: 2h", model: ", limits: {concurrency: 4, min_concurrency: 1, patience: 90s}",
			want: llm.Limits{Concurrency: 4, MinConcurrency: 1, Patience: 90 * time.Second}},
		{name: "workers", run: ", workers: 3", workers: 3},
		{name: "window is gone", run: ", window: 64", err: "run.window: this setting is gone; model calls are paced by each endpoint's limits"},
		{name: "negative workers", run: ", workers: -2", err: "run.workers: -2"},
		{name: "patience not a duration", endpoint: "patience: forever", err: `endpoints.e.limits.patience: "forever" is not a duration`},
		{name: "patience without unit", endpoint: "patience: 30", err: "endpoints.e.limits.patience"},
		{name: "patience zero", endpoint: "patience: 0s", err: "endpoints.e.limits.patience: 0s, want a positive duration"},
		{name: "unreachable not a duration", endpoint: "unreachable: never", err: `endpoints.e.limits.unreachable: "never" is not a duration (e.g. 60s`},
		{name: "unreachable negative", endpoint: "unreachable: -1s", err: "endpoints.e.limits.unreachable: -1s, want a positive duration"},
		{name: "bad model unreachable", model: ", limits: {unreachable: 0s}", err: "models.m.limits.unreachable: 0s"},
		{name: "min above concurrency", endpoint: "concurrency: 4, min_concurrency: 8", err: "endpoints.e.limits.min_concurrency: 8 is above concurrency 4"},
		{name: "min without concurrency", endpoint: "min_concurrency: 2", err: "endpoints.e.limits.min_concurrency: set concurrency beside it"},
		{name: "negative rpm", endpoint: "rpm: -5", err: "endpoints.e.limits.rpm: -5"},
		{name: "negative concurrency", endpoint: "concurrency: -1", err: "endpoints.e.limits.concurrency: -1"},
		{name: "bad model limits", model: ", limits: {patience: soon}", err: "models.m.limits.patience"},
		{name: "unknown limit key", endpoint: "burst: 3", err: "line 3: endpoints.e.limits.burst: unknown setting (known: concurrency, min_concurrency, patience, rpm, tpm, unreachable)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadYAML(t, fmt.Sprintf(limitsBase, tc.run, tc.endpoint, tc.model))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := Model(cfg, func(string) string { return "" }, false, 0)
			if len(m.Options.Endpoints) != 1 {
				t.Fatalf("endpoints %+v", m.Options.Endpoints)
			}
			if got := m.Options.Endpoints[0].Limits; got != tc.want {
				t.Errorf("limits %+v, want %+v", got, tc.want)
			}
			plan, _, err := cfg.Plan(func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if plan.Annotate.Workers != tc.workers || plan.Curate.Workers != tc.workers {
				t.Errorf("workers annotate %d curate %d, want %d", plan.Annotate.Workers, plan.Curate.Workers, tc.workers)
			}
		})
	}
}
