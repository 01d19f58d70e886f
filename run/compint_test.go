package run_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/compint/compinttest"
	"github.com/ac3/ac3/stages/compint/measure"
)

// TestCompIntConfig runs the shipped CompInt config (with the model-free
// strategies, two SCs and short contexts) against the in-process endpoint,
// and checks every number of the report's CompInt section against what the
// scripted model must give: fc and ao keep the SC (it sits in a user turn),
// lt keeps only the probe, so it loses it.
func TestCompIntConfig(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile("../fixtures/configs/compint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scs := filepath.Join(dir, "scs.json")
	if err := os.WriteFile(scs, []byte(compinttest.TwoSCs), 0o644); err != nil {
		t.Fatal(err)
	}
	fixtures, _ := filepath.Abs("../fixtures")
	text := string(raw)
	for old, repl := range map[string]string{
		"../../runs/":                       dir + "/",
		"../wildchat/":                      fixtures + "/wildchat/",
		"    # scs: my_scs.json\n":          "    scs: " + scs + "\n",
		"target_tokens: 8000":               "target_tokens: 3000",
		"max_contexts: 50":                  "max_contexts: 3",
		"[fc, ao, lt, concat, gated-reset]": "[fc, ao, lt]",
		"    gated_reset: {floor: 1}\n":     "",
		"    orders: random\n":              "    orders: both\n",
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("the shipped config no longer holds %q", old)
		}
		text = strings.ReplaceAll(text, old, repl)
	}
	path := filepath.Join(dir, "compint.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	srv := llmtest.New(t, llmtest.Options{})
	defer srv.Close()
	srv.Add(llmtest.Rule{Name: "model", Func: compinttest.Model(mustTwoSCs(t))})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(path, getenv)
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := cfg.Plan(getenv)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := run.Execute(ctx(t), plan, run.Options{Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if res.Stopped || len(res.FailedTasks()) != 0 {
		t.Fatalf("result %+v\n%s", res, log.String())
	}
	calls := srv.Count()

	b, err := os.ReadFile(filepath.Join(dir, "compint", "report.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.CompInt
	if c == nil {
		t.Fatalf("no CompInt section; log:\n%s", log.String())
	}
	// 3 contexts × 2 SCs: 6 instances with the SC and 6 baselines.
	if c.Instances != 6 || c.Baselines != 6 || c.Contexts != 3 || c.Failed != 0 {
		t.Fatalf("counts %+v\n%s", c, log.String())
	}
	// Asked in both orders, a model that always answers A is right in one
	// of two: ½ for every question it answers blind.
	blind := 0.5
	want := map[string][2]float64{"ao": {1, 1}, "fc": {1, 1}, "lt": {0, blind}} // retention, compacted
	pooled := 0
	for _, r := range c.Rows {
		if r.Location != measure.All {
			continue
		}
		pooled++
		w := want[r.Strategy]
		if r.N != 6 || float64(r.Retention.Rate) != w[0] || float64(r.Evidence.Rate) != w[0] || float64(r.Compacted.Rate) != w[1] ||
			r.UpperBound.Rate != 1 || r.LongWithSC.Rate != 1 || math.Abs(float64(r.LongNoSC.Rate)-blind) > 1e-9 {
			t.Errorf("%s: %+v (blind %v)", r.Strategy, r, blind)
		}
		iv := stats.Wilson(w[0]*6, 6, 0.95)
		if math.Abs(float64(r.Retention.Wilson.Lo)-iv.Lo) > 1e-6 || math.Abs(float64(r.Retention.Wilson.Hi)-iv.Hi) > 1e-6 {
			t.Errorf("%s: retention interval %+v, want %+v", r.Strategy, r.Retention.Wilson, iv)
		}
		if blind < 1-compint.DefaultMinDenominator {
			wantE := 1.0
			if r.Strategy == "lt" {
				wantE = 0
			}
			if !r.Effect.Defined || math.Abs(float64(r.Effect.Value)-wantE) > 1e-9 {
				t.Errorf("%s: effect retention %+v, want %v", r.Strategy, r.Effect, wantE)
			}
		}
	}
	if pooled != 3 {
		t.Errorf("%d pooled rows, want 3", pooled)
	}
	for _, p := range c.Pairs {
		discord := 0
		if p.B == "lt" {
			discord = 6 // retention: ao and fc keep all six SCs lt loses
			if p.Measure == "compliance" {
				discord = 6 // lt's ½ is not compliant in every order

			}
		}
		if p.N != 6 || p.AOnly != discord || p.BOnly != 0 || math.Abs(float64(p.P)-stats.McNemarExact(discord, 0)) > 1e-9 {
			t.Errorf("pair %+v, want %d discordant", p, discord)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "compint", "report.md"))
	if err != nil || !bytes.Contains(md, []byte("## CompInt")) {
		t.Errorf("report.md has no CompInt section (%v)", err)
	}

	// Resuming does nothing and pays nothing.
	log.Reset()
	if _, err := run.Execute(ctx(t), plan, run.Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if srv.Count() != calls {
		t.Errorf("the second run made %d calls", srv.Count()-calls)
	}
	if !strings.Contains(log.String(), "instances already built") {
		t.Errorf("the second run rebuilt the instances:\n%s", log.String())
	}

	// Other instance settings on the same run file are refused.
	plan.CompInt.TargetTokens = 2000
	if _, err := run.Execute(ctx(t), plan, run.Options{}); err == nil || !strings.Contains(err.Error(), "new run file") {
		t.Errorf("changed settings: err = %v", err)
	}
}

func mustTwoSCs(t *testing.T) *compint.Set {
	t.Helper()
	set, err := compint.Parse("two.json", []byte(compinttest.TwoSCs))
	if err != nil {
		t.Fatal(err)
	}
	return set
}
