package run_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// A plan that names something no stage has is refused before its first
// stage runs, so before any paid call: the model-backed classify that comes
// first must send nothing. Both before the run file exists (none is left
// behind) and on a run that has one.
func TestAPlanThatWouldStopIsRefusedBeforeAnyCall(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	model := run.Model{Options: &llm.Options{Endpoints: []llm.Endpoint{{Name: "m", BaseURL: srv.URL, Model: "m"}}}}
	bound := run.Model{Options: &llm.Options{
		Endpoints: []llm.Endpoint{{Name: "m", BaseURL: srv.URL, Model: "m"}},
		Roles:     map[string]llm.RoleBinding{"annotator": {Endpoint: "m"}, "respondent": {Endpoint: "m"}},
	}}
	for _, tc := range []struct {
		name string
		plan func(p *run.Plan)
		err  string
	}{
		{"unknown strategy", func(p *run.Plan) {
			p.Curate.Strategies = []string{"fc", "no-such-strategy"}
		}, `curate: building strategy "no-such-strategy": unknown strategy`},
		{"a respond strategy nobody curates", func(p *run.Plan) {
			p.Respond = &run.Respond{Strategies: []string{"fc", "lt"}}
		}, `respond: building respond stage: strategy "lt" has not been curated`},
		{"a judge pair of answers nobody gives", func(p *run.Plan) {
			p.Respond = &run.Respond{Strategies: []string{"fc"}}
			p.Judge = &run.Judge{Pairs: []string{"fc:ao"}}
		}, "judge:"},
		{"a judge role no model is bound to", func(p *run.Plan) {
			p.Model = bound
			p.Respond = &run.Respond{Strategies: []string{"fc", "ao"}}
			p.Judge = &run.Judge{Pairs: []string{"fc:ao"}}
		}, `judge: role "judge": no model is bound to it`},
	} {
		for _, existing := range []bool{false, true} {
			dir := t.TempDir()
			plan := modelFree(dir)
			plan.Model = model
			plan.Annotate = &run.Annotate{Classify: run.LLM}
			if existing {
				// The run exists: ingested, nothing annotated yet.
				in := run.Plan{DB: plan.DB, Ingest: plan.Ingest}
				if _, err := run.Execute(ctx(t), in, run.Options{}); err != nil {
					t.Fatal(err)
				}
				plan.Ingest = nil
			}
			tc.plan(&plan)
			before := srv.Count()
			_, err := run.Execute(ctx(t), plan, run.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s (run exists: %v): err %v, want one with %q", tc.name, existing, err, tc.err)
			}
			if n := srv.Count() - before; n != 0 {
				t.Errorf("%s (run exists: %v): %d requests reached the endpoint", tc.name, existing, n)
			}
			if _, serr := os.Stat(plan.DB); !existing && !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("%s: the refused plan left a run file", tc.name)
			}
			if _, serr := os.Stat(filepath.Join(dir, "curated.jsonl")); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("%s: the refused plan exported", tc.name)
			}
		}
	}
}

func TestANegativeBudgetIsRefused(t *testing.T) {
	for _, b := range []float64{-5, -0.001} {
		plan := modelFree(t.TempDir())
		plan.Model.BudgetUSD = b
		if _, err := run.Execute(ctx(t), plan, run.Options{}); err == nil || !strings.Contains(err.Error(), "--budget-usd or run.budget_usd") {
			t.Errorf("budget %v: err %v", b, err)
		}
		if _, err := run.Estimate(ctx(t), plan); err == nil {
			t.Errorf("budget %v: the dry run took it", b)
		}
	}
}
