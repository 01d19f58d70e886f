package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWithModel: a command's model flags win over the file where set and
// leave it alone where not; the endpoints the file holds are not changed.
func TestWithModel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.yaml")
	body := `run: {db: x.db, budget_usd: 5}
endpoints:
  e: {base_url: "http://127.0.0.1:1/v1", limits: {unreachable: 30s}}
models:
  m: {endpoint: e}
roles:
  judge: {model: m}
`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := configFrom(t, p)
	getenv := func(string) string { return "" }

	m := WithModel(cfg, getenv, ModelOverlay{})
	if m.BudgetUSD != 5 || m.NoCache || m.Batch != nil && m.Batch.All {
		t.Errorf("no flags: budget %v, no-cache %v, batch %+v; want the file's budget 5 and nothing else", m.BudgetUSD, m.NoCache, m.Batch)
	}
	if got := m.Options.Endpoints[0].Limits.Unreachable; got != 30*time.Second {
		t.Errorf("no flags: unreachable %v, want the file's 30s", got)
	}

	m = WithModel(cfg, getenv, ModelOverlay{NoCache: true, BudgetUSD: 2, Batch: true, Unreachable: 2 * time.Minute})
	if m.BudgetUSD != 2 || !m.NoCache || m.Batch == nil || !m.Batch.All {
		t.Errorf("flags: budget %v, no-cache %v, batch %+v; want 2, true, all", m.BudgetUSD, m.NoCache, m.Batch)
	}
	if got := m.Options.Endpoints[0].Limits.Unreachable; got != 2*time.Minute {
		t.Errorf("flags: unreachable %v, want 2m", got)
	}
	if got := Model(cfg, getenv, false, 0).Options.Endpoints[0].Limits.Unreachable; got != 30*time.Second {
		t.Errorf("the file's endpoint changed to unreachable %v", got)
	}

	if m := WithModel(nil, getenv, ModelOverlay{BudgetUSD: 1, Unreachable: time.Minute}); m.Options != nil || m.BudgetUSD != 1 {
		t.Errorf("no file, no environment: %+v, want no endpoints and the flag's budget", m)
	}
}
