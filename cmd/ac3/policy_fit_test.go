package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/curate/policy"
)

// policy fit on a run's own fc-vs-ao verdicts prints how it chose the
// strength and how well the policy does on held-out turns, and stores it
// for the report.
func TestPolicyFitReportsHeldOutScores(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	vars := map[string]string{"TEST_BASE_URL": srv.URL}
	cfg := writeMemoryConfig(t, dir, "")
	cfg = rewriteFile(t, cfg, "[fc, ao, gated-reset]", "[fc, ao]", "pairs: [gated-reset:ao, fc:ao]", "pairs: [fc:ao]")
	if out, err := runAppEnv(t, vars, "run", "--config", cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "m.db")
	out, err := runAppEnv(t, vars, "policy", "fit", "--db", db, "--folds", "3", "--folds-by-turn")
	if err != nil {
		t.Fatalf("policy fit: %v\n%s", err, out)
	}
	t.Logf("policy fit:\n%s", out)
	for _, want := range []string{"ties as losses", "L1 logistic, balanced classes, strength by 3-fold CV on f1 (folds by turn): λ = ", "held out: accuracy ", "majority class", "τ = ", "--tau "} {
		if !strings.Contains(out, want) {
			t.Errorf("policy fit output lacks %q:\n%s", want, out)
		}
	}
	ctx := context.Background()
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p, err := policy.Load(ctx, l)
	if err != nil || p == nil || p.Fit == nil || p.Fit.Folds != 3 || p.Fit.FoldsBy != "turn" || p.Fit.Ties != "losses" {
		t.Fatalf("stored policy %+v, %v", p, err)
	}
	if _, err := runAppEnv(t, vars, "policy", "fit", "--db", db, "--ties", "sometimes"); err == nil {
		t.Error("an unknown tie policy was accepted")
	}
}
