package run

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/shard"
	"github.com/ac3/ac3/stages/curate"
)

func TestForShardDividesLimits(t *testing.T) {
	base := Plan{
		Model: Model{BudgetUSD: 10, Options: &llm.Options{Endpoints: []llm.Endpoint{
			{Name: "a", Limits: llm.Limits{RPM: 600, TPM: 1000001, Concurrency: 6, MinConcurrency: 4}},
			{Name: "b"},
		}}},
		Report:  &Report{},
		Exports: []Export{{What: "curated"}},
	}
	for _, tc := range []struct {
		name     string
		spec     shard.Spec
		mode     string
		budget   float64
		want     llm.Limits
		dropsOut bool
	}{
		{"not sharded", shard.Spec{}, "", 10, llm.Limits{RPM: 600, TPM: 1000001, Concurrency: 6, MinConcurrency: 4}, false},
		{"divided", shard.Spec{Index: 1, Count: 4}, "", 2.5, llm.Limits{RPM: 150, TPM: 250001, Concurrency: 2, MinConcurrency: 2}, true},
		{"divided explicitly", shard.Spec{Index: 0, Count: 8}, ShardLimitsDivide, 1.25, llm.Limits{RPM: 75, TPM: 125001, Concurrency: 1, MinConcurrency: 1}, true},
		{"whole", shard.Spec{Index: 1, Count: 4}, ShardLimitsWhole, 10, llm.Limits{RPM: 600, TPM: 1000001, Concurrency: 6, MinConcurrency: 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.Shard, p.ShardLimits = tc.spec, tc.mode
			got, note := p.forShard()
			if got.Model.BudgetUSD != tc.budget {
				t.Errorf("budget %v, want %v", got.Model.BudgetUSD, tc.budget)
			}
			if l := got.Model.Options.Endpoints[0].Limits; l != tc.want {
				t.Errorf("limits %+v, want %+v", l, tc.want)
			}
			if l := got.Model.Options.Endpoints[1].Limits; l != (llm.Limits{}) {
				t.Errorf("no limits became %+v", l)
			}
			if (got.Report == nil) != tc.dropsOut || (note != "") != tc.dropsOut {
				t.Errorf("report kept %v, note %q", got.Report != nil, note)
			}
			if base.Model.Options.Endpoints[0].Limits.RPM != 600 || base.Model.BudgetUSD != 10 {
				t.Fatal("forShard changed the plan it was given")
			}
		})
	}
}

// A shard may not run a step that reads the whole run's conversations
// together; the same plan unsharded is fine.
func TestShardableRefusesWholeRunSteps(t *testing.T) {
	sh := shard.Spec{Index: 0, Count: 2}
	scored := curate.AdaptiveOptions{Policy: curate.PolicyScored}
	for _, tc := range []struct {
		name string
		plan Plan
		want string // in the error; "" for none
	}{
		{"plain curate", Plan{Curate: &Curate{Strategies: []string{"fc", "ao"}}}, ""},
		{"compint", Plan{CompInt: &CompInt{}}, "compint stitches"},
		{"online memory", Plan{Curate: &Curate{Strategies: []string{"fc"}, AC3: AC3{Memory: MemoryOnline}}}, "online memory"},
		{"offline memory", Plan{Curate: &Curate{Strategies: []string{"fc"}, AC3: AC3{Memory: MemoryOffline}}}, "offline memory"},
		{"scored adaptive", Plan{Curate: &Curate{Strategies: []string{"fc", "adaptive"}, AC3: AC3{Adaptive: scored}}}, "scored adaptive"},
		{"scored policy, no adaptive", Plan{Curate: &Curate{Strategies: []string{"fc"}, AC3: AC3{Adaptive: scored}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.plan.shardable(); err != nil {
				t.Fatalf("unsharded: %v", err)
			}
			tc.plan.Shard = sh
			err := tc.plan.shardable()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("sharded: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "merged run")):
				t.Fatalf("sharded: %v, want an error saying %q and what to do", err, tc.want)
			}
		})
	}
}

func TestStepFingerprints(t *testing.T) {
	p := Plan{Seed: 1, Ingest: &Ingest{Files: []string{"x"}}, Curate: &Curate{Strategies: []string{"fc"}},
		Model: Model{Options: &llm.Options{
			Endpoints: []llm.Endpoint{{Name: "m", Model: "qwen", BaseURL: "http://a", Limits: llm.Limits{RPM: 5}}},
			Roles:     map[string]llm.RoleBinding{"judge": {Endpoint: "m"}},
		}}}
	fp := func(p Plan) map[string]string {
		t.Helper()
		m, err := p.stepFingerprints()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := fp(p)
	if len(a) != 2 || a["ingest"] == "" || a["curate"] == "" {
		t.Fatalf("fingerprints %v, want ingest and curate", a)
	}
	// Addresses and limits may differ between machines.
	q := p
	q.Model.Options = &llm.Options{Endpoints: []llm.Endpoint{{Name: "m", Model: "qwen", BaseURL: "http://b", Limits: llm.Limits{RPM: 9}}}, Roles: p.Model.Options.Roles}
	if b := fp(q); b["curate"] != a["curate"] {
		t.Error("the endpoint's address or limits changed the fingerprint")
	}
	// Nor may how fast a step runs.
	w := p
	w.Curate = &Curate{Strategies: []string{"fc"}, Workers: 7}
	if b := fp(w); b["curate"] != a["curate"] {
		t.Error("workers changed the fingerprint")
	}
	// The model, the seed and the settings may not.
	q.Model.Options.Endpoints[0].Model = "llama"
	if b := fp(q); b["curate"] == a["curate"] {
		t.Error("another model kept the fingerprint")
	}
	r := p
	r.Seed = 2
	if b := fp(r); b["ingest"] == a["ingest"] {
		t.Error("another seed kept the fingerprint")
	}
	r = p
	r.Curate = &Curate{Strategies: []string{"ao"}}
	if b := fp(r); b["curate"] == a["curate"] || b["ingest"] != a["ingest"] {
		t.Error("curate settings must change curate's fingerprint only")
	}
}
