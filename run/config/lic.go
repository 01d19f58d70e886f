package config

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/lic/grade"
)

// licConfig is the lic section: the Lost-in-Conversation replay
// experiment (run.LiC). See fixtures/configs/lic-replay.yaml.
//
//	lic:
//	  replicates: 5          # baseline trajectories per instance (N)
//	  task_replicates: {code: 4}   # N of the tasks named (the paper's four on code)
//	  mode: lic              # lic (user_sim picks the shard), model (shard k, reworded) or verbatim
//	  user_role: user_sim
//	  respondent: respondent
//	  select_respondent: big # the baseline's assistant, which selects the pool (default: respondent)
//	  min_failures: 3        # keep instances failing in >= k of N; 0: unselected pool
//	  max_per_task: 25       # of those, the 25 per task failing most; 0: all
//	  fn_check: true         # the false-negative pre-filter
//	  fn_role: fn_check
//	  traces: one            # one failing baseline trace per instance (the paper's), or all
//	  unscored: drop         # an answer that could not be graded: left out of n (drop) or a failure
//	  restate_calls: false   # rebuilt actions contexts restate "give every call again" (B.1.3)
//	  strategies: [fc, ao, concat, augment, reset, gated-reset, rewrite]
//	  last_turns: 1          # final turns regenerated (K)
//	  reruns: 3              # answers per strategy and turn (M)
//	  encoding: o200k_base
//	  operators: {gated_reset: {floor: 2, cap: 3}}   # stages.curate's AC3 keys
//	  memory: {strategies: [augment, reset], seed: 1}   # the "+Memory" arm: sequential, learns from each graded instance
//	  grade: {db_dir: "", fillings: 8, seed: 1, allow_code_exec: false, code_tests: all, exec_timeout: 30s, query_timeout: 10s}
//	  out: runs/lic/         # accuracy.md and accuracy.json (default run.out)
//	  prompts: {user_sim: my-user.tmpl}   # users' templates: user_sim, respondent, fn_check, and curate's
type licConfig struct {
	Replicates     int                  `yaml:"replicates"`
	TaskReplicates map[string]int       `yaml:"task_replicates"`
	Mode           string               `yaml:"mode"`
	UserRole       string               `yaml:"user_role"`
	Respondent     string               `yaml:"respondent"`
	Select         string               `yaml:"select_respondent"`
	MinFailures    int                  `yaml:"min_failures"`
	MaxPerTask     int                  `yaml:"max_per_task"`
	FNCheck        bool                 `yaml:"fn_check"`
	FNRole         string               `yaml:"fn_role"`
	Traces         string               `yaml:"traces"`
	Unscored       string               `yaml:"unscored"`
	RestateCalls   bool                 `yaml:"restate_calls"`
	Strategies     []string             `yaml:"strategies"`
	LastTurns      int                  `yaml:"last_turns"`
	Reruns         int                  `yaml:"reruns"`
	Encoding       string               `yaml:"encoding"`
	Operators      map[string]yaml.Node `yaml:"operators"`
	Memory         licMemoryConfig      `yaml:"memory"`
	Prompts        map[string]string    `yaml:"prompts"` // read by loadPrompts
	Grade          struct {
		DBDir         string `yaml:"db_dir"`
		Fillings      int    `yaml:"fillings"`
		Seed          uint64 `yaml:"seed"`
		AllowCodeExec bool   `yaml:"allow_code_exec"`
		CodeTests     string `yaml:"code_tests"`
		ExecTimeout   string `yaml:"exec_timeout"`
		QueryTimeout  string `yaml:"query_timeout"`
		KeepDistinct  bool   `yaml:"keep_distinct"`
		NoPlugValues  bool   `yaml:"no_plug_values"`
	} `yaml:"grade"`
	Out string `yaml:"out"`
}

// licMemoryConfig is lic.memory, the memory arm (run.LiCMemory).
type licMemoryConfig struct {
	Strategies []string `yaml:"strategies"`
	Seed       uint64   `yaml:"seed"`
}

// LiC reads the lic section (nil when absent). Relative paths (db_dir,
// out) are taken from base, the config file's folder.
func (c *File) LiC(base string) (*run.LiC, error) {
	if c.LiCSection.Kind == 0 {
		return nil, nil
	}
	var lc licConfig
	if err := decode(&c.LiCSection, &lc, "lic"); err != nil {
		return nil, err
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	if len(lc.Strategies) == 0 {
		return nil, errors.New("lic.strategies: list at least one strategy to replay")
	}
	if c.Stages.Curate != nil || c.Stages.Respond.Kind != 0 {
		return nil, errors.New("lic: the replay runs its own curate and respond over the trajectories; remove stages.curate and stages.respond from this config")
	}
	// base: the operators' files (llm_compact prompts, filler corpora,
	// plug-in commands) are relative to this config, as under stages.curate.
	ac, err := (&File{base: c.base, Stages: stagesConfig{Curate: &curateConfig{Extra: lc.Operators}}}).AC3()
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), "stages.curate.", "lic.operators."))
	}
	ac.Prompts, ac.Texts = c.analyzerPrompts("lic"), c.curateTexts("lic")
	g := grade.Options{
		DBDir: rel(lc.Grade.DBDir), Fillings: lc.Grade.Fillings, Seed: lc.Grade.Seed, AllowExec: lc.Grade.AllowCodeExec,
		KeepDistinct: lc.Grade.KeepDistinct, NoPlugValues: lc.Grade.NoPlugValues,
	}
	switch t := grade.CodeTests(lc.Grade.CodeTests); t {
	case "", grade.TestsAll, grade.TestsCases, grade.TestsCheck:
		g.CodeTests = t
	default:
		return nil, fmt.Errorf("lic.grade.code_tests: %q, want all, cases or check", lc.Grade.CodeTests)
	}
	for _, d := range []struct {
		key string
		in  string
		out *time.Duration
	}{{"exec_timeout", lc.Grade.ExecTimeout, &g.ExecTimeout}, {"query_timeout", lc.Grade.QueryTimeout, &g.QueryTimeout}} {
		if d.in == "" {
			continue
		}
		if *d.out, err = time.ParseDuration(d.in); err != nil {
			return nil, fmt.Errorf("lic.grade.%s: %w", d.key, err)
		}
	}
	return &run.LiC{
		Replicates: lc.Replicates, TaskReplicates: lc.TaskReplicates, Mode: lc.Mode, UserRole: lc.UserRole, Respondent: lc.Respondent, SelectRespondent: lc.Select,
		MinFailures: lc.MinFailures, MaxPerTask: lc.MaxPerTask, FNCheck: lc.FNCheck, FNRole: lc.FNRole, Traces: lc.Traces, Unscored: lc.Unscored, RestateCalls: lc.RestateCalls,
		Strategies: lc.Strategies, LastTurns: lc.LastTurns, Reruns: lc.Reruns, Encoding: lc.Encoding,
		AC3: ac, Grade: g, Workers: c.Run.Workers, Out: cmp.Or(rel(lc.Out), c.Run.Out), Prompts: c.licPrompts(),
		Memory: run.LiCMemory{Strategies: lc.Memory.Strategies, Seed: lc.Memory.Seed},
	}, nil
}
