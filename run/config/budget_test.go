package config

import (
	"strings"
	"testing"
)

func TestBudgetMustCapSomething(t *testing.T) {
	for _, tc := range []struct {
		budget string
		err    string // "" when the config loads
	}{
		{"0", ""},
		{"12.5", ""},
		{"-5", "line 3: run.budget_usd: -5, want 0 (no cap) or a positive number of dollars"},
		{"-0.01", "line 3: run.budget_usd: -0.01, want"},
		{".nan", "line 3: run.budget_usd: not a number"},
		{"${BUDGET}", "line 3: run.budget_usd: -1, want"},
	} {
		raw := "run:\n  db: run.db\n  budget_usd: " + tc.budget + "\n"
		_, err := load([]byte(raw), "c.yaml", func(k string) string {
			if k == "BUDGET" {
				return "-1"
			}
			return ""
		})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("budget_usd %s: %v", tc.budget, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("budget_usd %s: err %v, want one with %q", tc.budget, err, tc.err)
		}
	}
}
