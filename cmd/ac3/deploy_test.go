package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/pipeline/shard"
	"github.com/ac3/ac3/run/config"
)

// deployVars are sample values for the shell variables in the deploy
// scripts' ac3 lines (any other expands to "x").
func deployVars() map[string]string {
	return map[string]string{"SLURM_ARRAY_TASK_ID": "0", "shards": "4"}
}

// fileLines is the ac3 command lines of one deploy file, by its extension.
func fileLines(name string, data []byte) ([]deployLine, error) {
	switch filepath.Ext(name) {
	case ".yaml", ".yml":
		return manifestLines(name, data, deployVars())
	case ".sh", ".sbatch":
		return ac3Commands(name, shellCommands(string(data), deployVars())), nil
	}
	return nil, nil
}

// deployLines reads every ac3 command line under deploy/, keyed by the
// file's path inside deploy/.
func deployLines(t *testing.T) map[string][]deployLine {
	t.Helper()
	root := repoPath("deploy")
	out := map[string][]deployLine{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines, err := fileLines(filepath.ToSlash(rel), data)
		if len(lines) > 0 {
			out[filepath.ToSlash(rel)] = lines
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDeployCommandLinesAreAccepted(t *testing.T) {
	got := deployLines(t)
	// How many ac3 lines each file has: finding fewer would mean the
	// extraction missed some, and the check below would pass vacuously.
	want := map[string]int{
		"kubernetes/job-shards.yaml": 1,
		"kubernetes/job-merge.yaml":  2,
		"slurm/shard.sbatch":         1,
		"slurm/merge.sbatch":         2,
	}
	counts := map[string]int{}
	for f, ls := range got {
		counts[f] = len(ls)
	}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("ac3 lines per deploy file: %v, want %v", counts, want)
	}
	for _, ls := range got {
		for _, l := range ls {
			if err := checkLine(l.argv); err != nil {
				t.Errorf("%s\n  ac3 refuses it: %v", l, err)
			}
		}
	}
}

func TestCheckLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{"ac3 run --config c.yaml", true},
		{"ac3 run --config=c.yaml --dry-run", true},
		{"ac3 ingest --db r.db a.jsonl b.jsonl", true},
		{"ac3 batch cancel --db r.db", true},
		{"ac3 run --confg c.yaml", false},                          // misspelled flag
		{"ac3 run --config c.yaml --shard-count 4", false},         // no such flag
		{"ac3 mrege --out r.db a.db", false},                       // no such command
		{"ac3 ingest a.jsonl", false},                              // --db is required
		{"ac3 ingest --db r.db a.jsonl --langauge English", false}, // read as a file name
		{"ac3 batch --db r.db", false},                             // needs a subcommand
		{"ac3", false},
	}
	for _, tt := range tests {
		err := checkLine(strings.Fields(tt.line))
		if (err == nil) != tt.ok {
			t.Errorf("checkLine(%q) = %v, want ok=%v", tt.line, err, tt.ok)
		}
	}
}

// A manifest with a misspelled flag fails the check: the test above guards
// the real files only if their lines reach checkLine.
func TestDeployMisspelledFlagFails(t *testing.T) {
	tests := []struct{ file, old, new string }{
		{"kubernetes/job-shards.yaml", `--shards, "4"]`, `--shard-count, "4"]`},
		{"kubernetes/job-merge.yaml", "--out", "--output"},
		{"kubernetes/job-merge.yaml", "exec ac3 run --config", "exec ac3 run --cnofig"},
		{"slurm/shard.sbatch", "--shard ", "--shrad "},
		{"slurm/merge.sbatch", "ac3 merge --force --out", "ac3 merge --force --into"},
	}
	for _, tt := range tests {
		data, err := os.ReadFile(repoPath("deploy", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(data), tt.old) != 1 {
			t.Fatalf("%s has %q %d times, want once (the command line)", tt.file, tt.old, strings.Count(string(data), tt.old))
		}
		bad := strings.Replace(string(data), tt.old, tt.new, 1)
		lines, err := fileLines(tt.file, []byte(bad))
		if err != nil {
			t.Fatal(err)
		}
		refused := false
		for _, l := range lines {
			refused = refused || checkLine(l.argv) != nil
		}
		if !refused {
			t.Errorf("%s with %q for %q: every line accepted", tt.file, tt.new, tt.old)
		}
	}
}

// flagValue is the value of --name in argv.
func flagValue(argv []string, name string) (string, bool) {
	for i, a := range argv {
		if a == "--"+name && i+1 < len(argv) {
			return argv[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// The Kubernetes files agree on the number of shards and on the run file:
// the Job's completions and parallelism, --shards, and the merge's inputs
// (every shard of the config's run.db) and output (that run.db).
func TestDeployKubernetesShardsAgree(t *testing.T) {
	var job struct {
		Spec struct {
			Completions    int    `yaml:"completions"`
			Parallelism    int    `yaml:"parallelism"`
			CompletionMode string `yaml:"completionMode"`
		} `yaml:"spec"`
	}
	readYAML(t, "kubernetes/job-shards.yaml", &job)
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	readYAML(t, "kubernetes/configmap.yaml", &cm)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cm.Data["config.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath, func(string) string { return "" })
	if err != nil {
		t.Fatalf("the ConfigMap's config: %v", err)
	}
	db := cfg.Run.DB

	lines := deployLines(t)
	run := lines["kubernetes/job-shards.yaml"][0].argv
	n, err := strconv.Atoi(must(flagValue(run, "shards")))
	if err != nil || job.Spec.CompletionMode != "Indexed" || job.Spec.Completions != n || job.Spec.Parallelism != n {
		t.Errorf("job-shards.yaml: completionMode %s, completions %d, parallelism %d, --shards %v; want Indexed and all equal",
			job.Spec.CompletionMode, job.Spec.Completions, job.Spec.Parallelism, run)
	}
	merge := lines["kubernetes/job-merge.yaml"][0].argv
	var shards []string
	for i := range n {
		shards = append(shards, shard.Spec{Index: i, Count: n}.Path(db))
	}
	if out, _ := flagValue(merge, "out"); out != db || !slices.Equal(positional(merge[2:], "out"), shards) {
		t.Errorf("job-merge.yaml merges %v, want --out %s %v", merge, db, shards)
	}
	for _, l := range append(lines["kubernetes/job-shards.yaml"], lines["kubernetes/job-merge.yaml"][1]) {
		if c, _ := flagValue(l.argv, "config"); c != "/etc/ac3/config.yaml" {
			t.Errorf("%s: want --config /etc/ac3/config.yaml, where the ConfigMap is mounted", l)
		}
	}
}

// positional is args less the flags, valued names the flags that take a
// value as the next argument.
func positional(args []string, valued ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, isFlag := strings.CutPrefix(args[i], "--")
		switch {
		case isFlag && slices.Contains(valued, name):
			i++
		case !isFlag:
			out = append(out, args[i])
		}
	}
	return out
}

func must(v string, ok bool) string {
	if !ok {
		return ""
	}
	return v
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(repoPath("deploy", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func TestShellCommands(t *testing.T) {
	vars := map[string]string{"n": "4", "db": "r.db"}
	tests := []struct {
		script string
		want   [][]string
	}{
		{"a b  c\n\nd", [][]string{{"a", "b", "c"}, {"d"}}},
		{"# comment\na # trailing\nb#c", [][]string{{"a"}, {"b#c"}}},
		{"a \\\n  b\\ c", [][]string{{"a", "b c"}}},
		{`a 'x y' "p $n q" "" ''`, [][]string{{"a", "x y", "p 4 q", "", ""}}},
		{`a ${db} ${db%.*}.x "${unset:-d}" $n/$n`, [][]string{{"a", "r.db", "r.db.x", "x", "4/4"}}},
		{"a $(b c) $((n - 1)); d && e | f", [][]string{{"a", "x", "x"}, {"d"}, {"e"}, {"f"}}},
		{`a "q \" \$n" $ b`, [][]string{{"a", `q " $n`, "$", "b"}}},
	}
	for _, tt := range tests {
		if got := shellCommands(tt.script, vars); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("shellCommands(%q) = %q, want %q", tt.script, got, tt.want)
		}
	}
}

func FuzzShellCommands(f *testing.F) {
	for _, name := range []string{"slurm/shard.sbatch", "slurm/merge.sbatch", "slurm/submit.sh", "kubernetes/submit.sh"} {
		data, err := os.ReadFile(repoPath("deploy", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add(`"unterminated ${x $(( 'q`)
	f.Fuzz(func(t *testing.T, script string) {
		cmds := shellCommands(script, map[string]string{"x": "1"})
		// Words of letters and spaces only are split as by strings.Fields.
		if strings.Trim(script, "abc \n") == "" {
			var want [][]string
			for _, l := range strings.Split(script, "\n") {
				if f := strings.Fields(l); len(f) > 0 {
					want = append(want, f)
				}
			}
			if !reflect.DeepEqual(cmds, want) {
				t.Errorf("shellCommands(%q) = %q, want %q", script, cmds, want)
			}
		}
	})
}
