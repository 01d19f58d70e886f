package run_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/run"
	"github.com/ac3/ac3/pipeline/run/config"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/lic/grade"
)

// licSeed reproduces how the client derives the seed of sample i from the
// respondent's configured seed (1 in lic-replay.yaml), so the scripted
// server can tell reruns apart.
func licSeed(i int) int64 {
	if i == 0 {
		return 1
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", 1, i, 0)
	return int64(h.Sum64() & (1<<31 - 1))
}

type licInstance struct {
	in    *grade.Instance
	last  string // the last shard
	first string
	index int // position among its task's records in the sample
}

func loadLiC(t *testing.T) []licInstance {
	t.Helper()
	b, err := os.ReadFile("../../fixtures/lic/sample_5_per_task.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var out []licInstance
	count := map[string]int{}
	for _, r := range raw {
		in, err := grade.ParseInstance(r)
		if err != nil {
			t.Fatal(err)
		}
		var sh struct {
			Shards []struct {
				ID   int    `json:"shard_id"`
				Text string `json:"shard"`
			} `json:"shards"`
		}
		json.Unmarshal(r, &sh)
		first, last := sh.Shards[0], sh.Shards[0]
		for _, s := range sh.Shards {
			if s.ID < first.ID {
				first = s
			}
			if s.ID > last.ID {
				last = s
			}
		}
		out = append(out, licInstance{in: in, first: first.Text, last: last.Text, index: count[in.Task]})
		count[in.Task]++
	}
	return out
}

func TestLiCReplayShapes(t *testing.T) {
	if os.Getenv("LIC_SHAPES") == "" {
		t.Skip("debug")
	}
	dir := t.TempDir()
	srv := llmtest.New(t, llmtest.Options{})
	insts := loadLiC(t)
	installAnalyzer(srv, insts)
	var mu sync.Mutex
	seen := map[string]bool{}
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		if r.Seed != nil && *r.Seed == licSeed(0) && strings.Contains(r.System(), "grade-school math") && strings.Contains(fmt.Sprint(r.Messages), "lollipops") {
			var b strings.Builder
			for _, m := range r.Messages {
				c := m.Content
				if len(c) > 600 {
					c = c[:600]
				}
				fmt.Fprintf(&b, "  [%s] %q\n", m.Role, c)
			}
			mu.Lock()
			if !seen[b.String()] {
				seen[b.String()] = true
				t.Logf("shape:\n%s", b.String())
			}
			mu.Unlock()
		}
		return llmtest.Reply{Content: "Final answer: -1"}
	}})
	plan := licPlan(t, srv, dir)
	res, err := run.Execute(ctx(t), plan, run.Options{Log: testLog{t}})
	t.Logf("%+v %v", res, err)
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) { l.t.Log(strings.TrimSpace(string(b))); return len(b), nil }

func licPlan(t *testing.T, srv *llmtest.Server, dir string) run.Plan {
	t.Helper()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
	cfg, err := config.Load("../../fixtures/configs/lic-replay.yaml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := cfg.Plan(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	plan.DB = filepath.Join(dir, "run.db")
	plan.LiC.Out = dir
	plan.Report.Out = filepath.Join(dir, "report")
	return plan
}

// which finds the instance a request is about: the one whose first shard
// (or last, for contexts that dropped the first) it contains.
func which(insts []licInstance, text string) *licInstance {
	for i := range insts {
		if strings.Contains(text, insts[i].first) {
			return &insts[i]
		}
	}
	return nil
}

func requestText(r llmtest.ChatRequest) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// installAnalyzer scripts the analyzer: its specification and rewrite
// name the instance (SPEC[first shard], BRIEFING[first shard]) so the
// replayed contexts can be told apart, it always finds an issue (so the
// operators act), and on the first two math instances the specification
// gives the reference answer away (the leak the report measures).
func installAnalyzer(srv *llmtest.Server, insts []licInstance) {
	srv.Add(llmtest.Rule{Name: "analyzer", Match: func(r llmtest.ChatRequest) bool { return analyzetest.Kind(r) != "" }, Func: func(r llmtest.ChatRequest) llmtest.Reply {
		n := analyzetest.Nonce(r)
		tag := func(name, body string) string { return "<" + name + ` id="` + n + `">` + "\n" + body + "\n</" + name + ">" }
		in := which(insts, requestText(r))
		first := "?"
		if in != nil {
			first = in.first
		}
		switch analyzetest.Kind(r) {
		case analyzetest.KindSpec, analyzetest.KindContagious:
			spec := "SPEC[" + first + "]"
			if in != nil && in.in.Task == grade.TaskMath && in.index < 2 {
				ref, _ := grade.GSM8KAnswer(in.in.Answer)
				spec += " The result should come out at " + ref.Text + "."
			}
			return llmtest.Reply{Content: tag("spec", spec)}
		case analyzetest.KindEvaluate:
			return llmtest.Reply{Content: tag("aligned", "work so far") + "\n" + tag("issues", "answered before the details were in")}
		case analyzetest.KindRewrite, analyzetest.KindRewritePaper:
			return llmtest.Reply{Content: tag("context", "BRIEFING["+first+"]")}
		}
		return llmtest.Reply{Content: "unexpected analyzer call"}
	}})
}
