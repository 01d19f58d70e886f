package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/policy"
)

// judgedFCAO runs the memory test's config with fc and ao curated,
// answered and judged against each other by the scripted endpoint: the
// server, the config's variables, its path and the run file.
func judgedFCAO(t *testing.T) (*llmtest.Server, map[string]string, string, string) {
	t.Helper()
	srv := startScripted(t)
	dir := t.TempDir()
	vars := map[string]string{"TEST_BASE_URL": srv.URL}
	cfg := writeMemoryConfig(t, dir, "")
	cfg = rewriteFile(t, cfg, "[fc, ao, gated-reset]", "[fc, ao]", "pairs: [gated-reset:ao, fc:ao]", "pairs: [fc:ao]")
	if out, err := runAppEnv(t, vars, "run", "--config", cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "m.db")
	return srv, vars, cfg, db
}

// policy fit on a run's own fc-vs-ao verdicts prints how it chose the
// strength and how well the policy does on held-out turns, and stores it
// for the report.
func TestPolicyFitReportsHeldOutScores(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	_, vars, _, db := judgedFCAO(t)
	out, err := runAppEnv(t, vars, "policy", "fit", "--db", db, "--folds", "3", "--folds-by-turn")
	if err != nil {
		t.Fatalf("policy fit: %v\n%s", err, out)
	}
	t.Logf("policy fit:\n%s", out)
	for _, want := range []string{"ties as losses", "L1 logistic, balanced classes, strength by 3-fold CV on f1 (folds by turn): λ = ", "held out: accuracy ", "majority class", "τ = ", "--tau ", "in sample: keeps fc on ", "cross-fitted: keeps fc on "} {
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

// embedCalls counts the embeddings requests srv has had.
func embedCalls(srv *llmtest.Server) int {
	n := 0
	for _, c := range srv.Calls() {
		if strings.HasSuffix(c.Path, "/embeddings") {
			n++
		}
	}
	return n
}

// policy fit --features paper embeds the judged turns' prompts and
// histories by the embedder role (through the run's cache: a second fit
// pays for none), stores the principal components with the policy, and
// curating with it embeds each conversation's turns and scores them.
func TestPolicyFitOnThePapersFeatures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	srv, vars, cfg, db := judgedFCAO(t)
	for _, args := range [][]string{{}, {"--config", cfg}} {
		out, err := runAppEnv(t, vars, append([]string{"policy", "fit", "--db", db, "--features", "paper", "--folds", "3"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "embedder role") {
			t.Fatalf("a paper fit without an embedder role (%v): %v\n%s", args, err, out)
		}
	}
	cfg = rewriteFile(t, cfg, "  judge: {model: m}\n", "  judge: {model: m}\n  embedder: {model: emb}\n", "  m: {endpoint: main}\n", "  m: {endpoint: main}\n  emb: {endpoint: main, name: emb-small}\n")
	before := embedCalls(srv)
	out, err := runAppEnv(t, vars, "policy", "fit", "--db", db, "--config", cfg, "--features", "paper", "--folds", "3", "--folds-by-turn", "--embed-max-tokens", "300")
	if err != nil {
		t.Fatalf("policy fit: %v\n%s", err, out)
	}
	fitOut := out
	for _, want := range []string{"features of Huang et al. A.15: embeddings by emb-small cut at 300 tokens", "largest kept coefficients"} {
		if !strings.Contains(out, want) {
			t.Errorf("policy fit output lacks %q:\n%s", want, out)
		}
	}
	fitCalls := embedCalls(srv) - before
	if fitCalls == 0 {
		t.Fatal("the paper fit sent no embeddings request")
	}
	ctx := context.Background()
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(ctx, l)
	l.Close()
	if err != nil || p == nil || !p.Paper() || p.PromptPCA == nil || p.EmbedMaxTokens != 300 || p.Embedder == "" {
		t.Fatalf("stored policy: %v (paper %v)", err, p != nil && p.Paper())
	}
	if n := len(p.PromptPCA.Components); n < 1 || n > policy.DefaultPCs || p.Features[0] != "round_num" {
		t.Errorf("%d prompt components, features %v", n, p.Features[:3])
	}
	// Fitting again reads every embedding from the run's cache.
	before = embedCalls(srv)
	if out, err := runAppEnv(t, vars, "policy", "fit", "--db", db, "--config", cfg, "--features", "paper", "--folds", "3", "--folds-by-turn", "--embed-max-tokens", "300"); err != nil {
		t.Fatalf("policy fit again: %v\n%s", err, out)
	}
	if n := embedCalls(srv) - before; n != 0 {
		t.Errorf("the second fit sent %d embeddings requests, want 0 (cached)", n)
	}
	// The dry run counts the embedding calls and sends nothing.
	before = embedCalls(srv)
	out, err = runAppEnv(t, vars, "curate", "--db", db, "--config", cfg, "--strategies", "adaptive", "--adaptive-policy", "scored", "--dry-run")
	t.Logf("policy fit:\n%s\ndry run:\n%s", fitOut, out)
	if err != nil || !strings.Contains(out, "embedder") || embedCalls(srv) != before {
		t.Errorf("dry run (%d embeddings requests sent): %v\n%s", embedCalls(srv)-before, err, out)
	}
	if out, err := runAppEnv(t, vars, "curate", "--db", db, "--config", cfg, "--strategies", "adaptive", "--adaptive-policy", "scored"); err != nil {
		t.Fatalf("curate adaptive: %v\n%s", err, out)
	}
	if embedCalls(srv) == before {
		t.Error("curating with the paper's policy sent no embeddings request")
	}
	scored := 0
	units := doneUnits(t, db, curate.StageName)["adaptive"]
	for _, u := range units {
		x, err := curated.DecodeContext(u.Output)
		if err != nil {
			t.Fatal(err)
		}
		if x.Info.Scored {
			scored++
		}
	}
	if scored == 0 {
		t.Error("no adaptive turn was scored")
	}

	// In batch mode: a policy refitted with texts cut elsewhere asks for
	// new embeddings, which go in one batch round.
	if out, err := runAppEnv(t, vars, "policy", "fit", "--db", db, "--config", cfg, "--features", "paper", "--folds", "3", "--folds-by-turn", "--embed-max-tokens", "200"); err != nil {
		t.Fatalf("policy fit at 200 tokens: %v\n%s", err, out)
	}
	batches := len(srv.Batches())
	cfg = rewriteFile(t, cfg, "report: {", "batch: {poll: 1ms}\nreport: {")
	if out, err := runAppEnv(t, vars, "curate", "--db", db, "--config", cfg, "--batch", "--strategies", "adaptive", "--adaptive-policy", "scored"); err != nil {
		t.Fatalf("curate adaptive in batch mode: %v\n%s", err, out)
	}
	if n := len(srv.Batches()) - batches; n != 1 {
		t.Errorf("curating with the refitted policy in batch mode made %d batches, want 1 (the embeddings)", n)
	}
	if got := len(doneUnits(t, db, curate.StageName)["adaptive"]); got != len(units) || got == 0 {
		t.Errorf("%d adaptive units of the refitted policy after the batch round, want %d", got, len(units))
	}
}
