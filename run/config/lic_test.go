package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/lic/grade"
)

func TestShippedLiCConfigs(t *testing.T) {
	env := func(k string) string { return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}[k] }
	for _, c := range []struct {
		file                string
		replicates, minFail int
		mode                string
		check               bool
	}{
		{"lic-replay.yaml", 1, 0, "verbatim", false},
		{"lic-replay-paper.yaml", 5, 3, "lic", true},
	} {
		cfg, err := Load(filepath.Join("../../fixtures/configs", c.file), env)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := cfg.Plan(env)
		if err != nil {
			t.Fatal(err)
		}
		l := p.LiC
		if l == nil {
			t.Fatalf("%s: no lic step", c.file)
		}
		if c.check != (l.MaxPerTask == 25) {
			t.Errorf("%s: max_per_task %d", c.file, l.MaxPerTask)
		}
		if l.Replicates != c.replicates || l.MinFailures != c.minFail || l.Mode != c.mode || l.FNCheck != c.check {
			t.Errorf("%s: %+v", c.file, l)
		}
		if strings.Join(l.Strategies, ",") != "fc,ao,concat,augment,reset,gated-reset,rewrite" || l.LastTurns != 1 || l.Reruns != 3 {
			t.Errorf("%s: strategies %v, last %d, reruns %d", c.file, l.Strategies, l.LastTurns, l.Reruns)
		}
		if l.Grade.AllowExec || l.Grade.Fillings != 8 || l.Out != p.Report.Out || p.Curate != nil || p.Respond != nil {
			t.Errorf("%s: grade %+v, out %q", c.file, l.Grade, l.Out)
		}
		// The paper preset's AO arm, the denominator of every gap closure,
		// is Huang et al.'s, and its rewrite the paper's variant (issue 30).
		if c.check && (l.AC3.AO != curate.HuangAO() || l.AC3.Rewrite != analyze.RewritePaper || l.Grade.CodeTests != grade.TestsCases || l.Traces != "one") {
			t.Errorf("%s: ao %+v, rewrite %q, code tests %q, traces %q; want Huang et al.'s AO, the paper's rewrite, LiC's test cases, one trace", c.file, l.AC3.AO, l.AC3.Rewrite, l.Grade.CodeTests, l.Traces)
		}
		// The paper preset runs Table 1's "+ Memory" rows (B.1.3: Augment,
		// Reset, Gated Reset), restates the calls on actions and counts
		// code's four replicates; the sample's config has no memory arm.
		if c.check && (!l.RestateCalls || l.TaskReplicates["code"] != 4 || l.Replicates != 5) {
			t.Errorf("%s: restate_calls %v, replicates %d, task replicates %v", c.file, l.RestateCalls, l.Replicates, l.TaskReplicates)
		}
		if mem := strings.Join(l.Memory.Strategies, ","); c.check && (mem != "augment,reset,gated-reset" || l.Memory.Seed != 1) || !c.check && mem != "" {
			t.Errorf("%s: memory arm %+v", c.file, l.Memory)
		}
	}
}

func TestLiCSection(t *testing.T) {
	write := func(t *testing.T, body string) string {
		p := filepath.Join(t.TempDir(), "lic.yaml")
		if err := os.WriteFile(p, []byte("run: {db: run.db, out: out}\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write(t, `lic:
  strategies: [fc, ao, gated-reset]
  select_respondent: big
  traces: all
  mode: lic
  operators: {gated_reset: {floor: 1, cap: 2}}
  grade: {db_dir: spider, allow_code_exec: true, code_tests: cases, exec_timeout: 5s}
`)
	cfg := configFrom(t, p)
	l, err := cfg.LiC(cfg.base)
	if err != nil {
		t.Fatal(err)
	}
	if g := l.AC3.Gates[curated.OpGatedReset]; g.Floor != 1 || g.Cap != 2 {
		t.Errorf("gate %+v", g)
	}
	if l.SelectRespondent != "big" || l.Traces != "all" || l.Mode != "lic" {
		t.Errorf("select_respondent %q, traces %q, mode %q", l.SelectRespondent, l.Traces, l.Mode)
	}
	if l.Grade.DBDir != filepath.Join(filepath.Dir(p), "spider") || !l.Grade.AllowExec || l.Grade.CodeTests != grade.TestsCases || l.Grade.ExecTimeout != 5*time.Second {
		t.Errorf("grade %+v", l.Grade)
	}
	if l.Out != filepath.Join(filepath.Dir(p), "out") {
		t.Errorf("out %q", l.Out)
	}

	for _, c := range []struct{ body, want string }{
		{"lic: {strategies: [fc], replicas: 2}\n", "replicas"},
		{"lic: {replicates: 2}\n", "lic.strategies"},
		{"lic: {strategies: [fc], operators: {gated: {floor: 1}}}\n", "lic.operators.gated"},
		{"lic: {strategies: [fc], grade: {code_tests: some}}\n", "lic.grade.code_tests"},
		{"lic: {strategies: [fc], grade: {exec_timeout: soon}}\n", "lic.grade.exec_timeout"},
		{"lic: {strategies: [fc]}\nstages: {curate: {strategies: [fc]}}\n", "remove stages.curate"},
	} {
		cfg, err := Load(write(t, c.body), func(string) string { return "" })
		if err == nil {
			_, _, err = cfg.Plan(func(string) string { return "" })
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %s", c.body, err, c.want)
		}
	}
}
