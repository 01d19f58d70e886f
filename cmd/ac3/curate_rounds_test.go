package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run/export"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

// curateRounds is the number of batches that carried the analyzer's
// requests (curate's: both analysis steps, rewrite, sum), which is curate's
// batch rounds however the run groups its stages' requests into batches,
// and how many analyzer requests each mode sent.
func curateRounds(srv *llmtest.Server) (rounds, calls int) {
	batches := map[string]bool{}
	for _, c := range srv.Calls() {
		if analyzetest.Kind(c.Request) == "" {
			continue
		}
		calls++
		if c.Batch != "" {
			batches[c.Batch] = true
		}
	}
	return len(batches), calls
}

// curateRoundsConfig writes the e2e config into dir with curate's (not
// respond's) strategies replaced by strategies when it is not "", and
// extra appended.
func curateRoundsConfig(t *testing.T, dir, strategies, extra string) string {
	t.Helper()
	cfg := e2eConfig(t, dir, "5")
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if strategies != "" {
		const curateLine = "    strategies: [fc, ao, gated-reset]\n"
		if !strings.Contains(text, curateLine) {
			t.Fatal("the e2e config no longer lists curate's strategies as this test expects")
		}
		text = strings.Replace(text, curateLine, "    strategies: "+strategies+"\n", 1)
	}
	if err := os.WriteFile(cfg, []byte(text+"\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCurateBatchRounds runs the e2e config, and the e2e config with the
// strategies of the held-out job of issue 28, online and in batch mode:
// curate's batch rounds are the depth of its calls (the analysis' two
// steps, then the rewrite call), not the length of the conversations, the
// whole run stays within 8 rounds, and every export is the online run's
// byte for byte (the reports' spend sections aside: see withoutSpend).
func TestCurateBatchRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	for _, c := range []struct {
		name       string
		strategies string
		rounds     int // curate's
		all        int // the run's at most
	}{
		// The e2e config as shipped (curate in 2 rounds) is
		// TestEndToEndBatchMatchesOnline's, which checks its exports and
		// rounds the same way.
		{name: "held-out strategies", strategies: "[fc, ao, gated-reset, augment, rewrite, sum, adaptive]", rounds: 3, all: 8},
		// Sequential by design: a first round with step 1 of every
		// conversation, then 3 per conversation (7 of them), then the
		// last conversation's rewrite calls.
		{name: "online memory", strategies: "[fc, ao, gated-reset, rewrite, sum]\n    memory: {regime: online}", rounds: 1 + 3*7 + 1, all: 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			outputs := map[bool]map[string][]byte{}
			for _, batch := range []bool{false, true} {
				srv := startScripted(t)
				dir := t.TempDir()
				cfg := curateRoundsConfig(t, dir, c.strategies, "batch:\n  poll: 1ms\n")
				vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
				args := []string{"run", "--config", cfg}
				if batch {
					args = append(args, "--batch")
				}
				out, err := runAppEnv(t, vars, args...)
				if err != nil {
					t.Fatalf("ac3 %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				db, outDir := filepath.Join(dir, "e2e.db"), filepath.Join(dir, "e2e")
				for _, f := range []string{"jsonl", "sft"} {
					p := filepath.Join(outDir, "extra-"+export.FileName("curated", f))
					if o, err := runAppEnv(t, vars, "export", "--db", db, "--what", "curated", "--format", f, "--out", p); err != nil {
						t.Fatalf("ac3 export curated %s: %v\n%s", f, err, o)
					}
				}
				outputs[batch] = readDir(t, outDir)
				rounds, calls := curateRounds(srv)
				t.Logf("batch=%v: %d analyzer requests, curate in %d batch rounds, %d batches in all", batch, calls, rounds, len(srv.Batches()))
				if !batch {
					continue
				}
				if rounds != c.rounds {
					t.Errorf("curate took %d batch rounds, want %d", rounds, c.rounds)
				}
				if n := strings.Count(out, "wait for batch answers"); n > c.all {
					t.Errorf("the run took %d batch rounds, want at most %d:\n%s", n, c.all, out)
				}
			}
			if len(outputs[false]) == 0 {
				t.Fatal("the online run wrote nothing")
			}
			for name, want := range outputs[false] {
				got, ok := outputs[true][name]
				if strings.HasPrefix(name, "report.") {
					got, want = withoutSpend(t, name, got), withoutSpend(t, name, want)
				}
				switch {
				case !ok:
					t.Errorf("the batch run did not write %s", name)
				case !bytes.Equal(got, want):
					t.Errorf("%s differs from the online run's (%d bytes, want %d)", name, len(got), len(want))
				}
			}
		})
	}
}
