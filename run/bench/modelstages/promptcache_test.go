package modelstages_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	ac3run "github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
)

// Issue 33: how much of the e2e config's input the in-process endpoint's
// emulated prompt cache serves (see llmtest's package doc: the longest
// prefix shared with a recent request, from 1,024 tokens in steps of 128,
// 4 bytes a token), per stage, and what the run costs at the config's
// prices against what it would cost with no cache at all.

// cacheFigures is one stage's row.
type cacheFigures struct {
	stage                string
	calls                int64
	prompt, cached       int64
	costUSD, uncachedUSD float64
	estimated            float64 // the share the dry run expected
}

func (f cacheFigures) share() float64 {
	if f.prompt == 0 {
		return 0
	}
	return float64(f.cached) / float64(f.prompt)
}

// runE2ECached runs fixtures/configs/e2e.yaml against a scripted in-process
// endpoint and returns the figures of each stage and the total ("all").
func runE2ECached(tb testing.TB, answers answerLength, input string) (result []cacheFigures, dryRun string) {
	tb.Helper()
	result, dryRun, _ = runCached(tb, answers, input, analyzetest.Script{}, nil)
	return result, dryRun
}

// runCached is runE2ECached with the analyzer's answers scripted by script
// and the config's text changed by edit (nil: as shipped).
// It also returns every request the endpoint received.
func runCached(tb testing.TB, answers answerLength, input string, script analyzetest.Script, edit func(string) string) (result []cacheFigures, dryRun string, calls []llmtest.Call) {
	tb.Helper()
	srv := llmtest.New(tb, llmtest.Options{})
	analyzetest.Install(srv, script)
	srv.Add(llmtest.Rule{Name: "e2e", Func: e2eModel(answers)})

	dir := tb.TempDir()
	raw, err := os.ReadFile("../../../fixtures/configs/e2e.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	fixtures, _ := filepath.Abs("../../../fixtures")
	text := strings.ReplaceAll(string(raw), "../../runs/", dir+"/")
	text = strings.ReplaceAll(text, "../wildchat/", fixtures+"/wildchat/")
	if input != "" {
		text = strings.ReplaceAll(text, "wildchat-1m-sample10.jsonl", input)
	}
	if edit != nil {
		text = edit(text)
	}
	path := filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "AC3_E2E_BASE_URL" {
			return srv.URL
		}
		return os.Getenv(k)
	}
	cfg, err := config.Load(path, getenv)
	if err != nil {
		tb.Fatal(err)
	}
	plan, _, err := cfg.Plan(getenv)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fc, err := ac3run.Estimate(ctx, plan)
	if err != nil {
		tb.Fatal(err)
	}
	var dry strings.Builder
	if err := ac3run.DryRun(ctx, &dry, plan, nil, false); err != nil {
		tb.Fatal(err)
	}
	estimated := map[string][2]int64{} // stage → input, cached tokens the dry run expects
	for _, sf := range fc.Stages {
		stage := sf.Stage
		if stage == "curate" {
			stage = "analyze" // curate's calls are the analyzer's, recorded under its name
		}
		e := estimated[stage]
		estimated[stage] = [2]int64{e[0] + sf.InputTokens, e[1] + sf.CachedTokens}
	}
	estimated["all"] = [2]int64{fc.TotalInputTokens, fc.TotalCachedTokens}
	res, err := ac3run.Execute(ctx, plan, ac3run.Options{Log: io.Discard})
	if err != nil {
		tb.Fatal(err)
	}
	if failed := res.FailedTasks(); len(failed) > 0 {
		tb.Fatalf("failed tasks: %+v", failed)
	}

	l, err := ledger.Open(ctx, filepath.Join(dir, "e2e.db"), ledger.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	st, err := l.Status(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	prices := map[string]llm.Price{}
	for _, m := range plan.Model.Options.Endpoints {
		prices[m.Model] = m.Price
	}
	rows := map[string]*cacheFigures{}
	all := &cacheFigures{stage: "all"}
	for _, u := range st.LLM {
		f := rows[u.Stage]
		if f == nil {
			f = &cacheFigures{stage: u.Stage}
			rows[u.Stage] = f
		}
		p := prices[u.Model]
		// Only calls sent to the endpoint: a repeat answered from the run's
		// own answer cache costs nothing and is counted there.
		sent := u.Calls - u.CacheHits
		ci := p.CachedInput
		if ci == 0 {
			ci = p.Input
		}
		uncached := u.CostUSD + float64(u.SentCachedTokens)*(p.Input-ci)/1e6
		for _, g := range []*cacheFigures{f, all} {
			g.calls += sent
			g.prompt += u.SentPromptTokens
			g.cached += u.SentCachedTokens
			g.costUSD += u.CostUSD
			g.uncachedUSD += uncached
		}
	}
	var out []cacheFigures
	rows["all"] = all
	for _, f := range rows {
		if e := estimated[f.stage]; e[0] > 0 {
			f.estimated = float64(e[1]) / float64(e[0])
		}
		if f != all {
			out = append(out, *f)
		}
	}
	slices.SortFunc(out, func(a, b cacheFigures) int { return strings.Compare(a.stage, b.stage) })
	return append(out, *all), dry.String(), srv.Calls()
}

// answerLength is how long the scripted respondent's answers are.
type answerLength int

const (
	// shortAnswers are one line, as the e2e test's scripted respondent
	// writes (cmd/ac3/e2e_test.go): the judge's prompts are then mostly
	// the history, as in the measurement.
	shortAnswers answerLength = iota
	// longAnswers are about 400 tokens with a 200-token reasoning trace,
	// what a small reasoning model writes under the config's 1,024-token
	// cap: the candidates, which differ per call, then weigh what they
	// would against the shared history.
	longAnswers
)

func (a answerLength) String() string {
	if a == longAnswers {
		return "long answers (400 + 200 tokens)"
	}
	return "short answers (one line)"
}

// e2eModel answers every request of the e2e config that analyzetest does
// not: the judge, classify, constraints and the respondent.
func e2eModel(answers answerLength) func(llmtest.ChatRequest) llmtest.Reply {
	return func(r llmtest.ChatRequest) llmtest.Reply { return e2eAnswer(answers, r) }
}

func e2eAnswer(answers answerLength, r llmtest.ChatRequest) llmtest.Reply {
	if n := nonceOf(r, "verdict"); n != "" {
		return llmtest.Reply{Content: fmt.Sprintf(`<verdict id="%s">{"quality":{"winner":"A","justification":"clearer.","confidence":0.7},"on_topic":{"winner":"tie","justification":"both stay on topic."}}</verdict>`, n)}
	}
	if n := nonceOf(r, "answer"); n != "" {
		if strings.Contains(r.System(), "session constraints") {
			return llmtest.Reply{Content: annotatortest.Answer(n, `{"constraints": []}`)}
		}
		return llmtest.Reply{Content: annotatortest.Answer(n, `{"type":"feedback","confidence":0.8,"reason":"refers back","refs":["1a"]}`)}
	}
	h := sha256.Sum256([]byte(fmt.Sprint(r.Messages)))
	if answers == shortAnswers {
		return llmtest.Reply{Content: fmt.Sprintf("Reply %x to the last message.", h[:4]), Reasoning: "scripted reasoning"}
	}
	return llmtest.Reply{Content: prose(binary.LittleEndian.Uint64(h[:]), 1600), Reasoning: prose(binary.LittleEndian.Uint64(h[8:]), 800)}
}

// nonceOf is the nonce of the answer's tag: at the end of the last message
// where ac3 states the answer's form, or, in prompts laid out before issue
// 33 (to measure them with this same script), in the system message.
func nonceOf(r llmtest.ChatRequest, tag string) string {
	if n := r.Nonce(tag); n != "" {
		return n
	}
	sys := llmtest.ChatRequest{Messages: []llmtest.Message{{Role: "user", Content: r.System()}}}
	return sys.Nonce(tag)
}

// prose is about n bytes of words picked by seed.
func prose(seed uint64, n int) string {
	words := []string{"the", "totals", "table", "monthly", "function", "returns", "value", "check", "input", "we", "can", "use", "a", "loop", "over", "rows", "and", "sum", "each", "column", "then", "format", "result", "as", "requested"}
	var b strings.Builder
	for b.Len() < n {
		seed = seed*6364136223846793005 + 1442695040888963407
		b.WriteString(words[(seed>>33)%uint64(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}

func printCacheTable(w io.Writer, rows []cacheFigures) {
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tcalls\tprompt tokens\tcached\tshare\tdry run\tspend $\tuncached $\tsaved\t")
	for _, f := range rows {
		saved := 0.0
		if f.uncachedUSD > 0 {
			saved = 1 - f.costUSD/f.uncachedUSD
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f%%\t%.1f%%\t%.4f\t%.4f\t%.1f%%\t\n", f.stage, f.calls, f.prompt, f.cached, 100*f.share(), 100*f.estimated, f.costUSD, f.uncachedUSD, 100*saved)
	}
	tw.Flush()
	fmt.Fprintln(w, `share: prompt tokens the emulated prompt cache served; dry run: the share
the dry run expected (stages that report no prompt layout count none); spend: at the e2e
config's prices (judge-model cached input at a tenth of input; the
respondent's model has no cached price, so its cached tokens cost in full);
uncached: the same tokens with no cache.`)
}

// figureOf returns the row of stage.
func figureOf(rows []cacheFigures, stage string) cacheFigures {
	for _, f := range rows {
		if f.stage == stage {
			return f
		}
	}
	return cacheFigures{stage: stage}
}

// TestPromptCacheShares checks issue 33's targets on the e2e config: at
// least half of the judge's input tokens and 30% of all input tokens come
// back cached, and the spend falls below the uncached price accordingly.
// The figures depend only on the order requests arrive in, not on time.
func TestPromptCacheShares(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the e2e config")
	}
	rows, dryRun := runE2ECached(t, shortAnswers, "")
	var b strings.Builder
	printCacheTable(&b, rows)
	t.Logf("\n%s", b.String())
	judgeRow, all := figureOf(rows, "judge"), figureOf(rows, "all")
	if judgeRow.share() < 0.5 {
		t.Errorf("the cache served %.1f%% of the judge's input, want >= 50%%", 100*judgeRow.share())
	}
	if all.share() < 0.3 {
		t.Errorf("the cache served %.1f%% of all input, want >= 30%%", 100*all.share())
	}
	if all.costUSD >= all.uncachedUSD {
		t.Errorf("spend $%.4f, not below the uncached $%.4f", all.costUSD, all.uncachedUSD)
	}
	// The dry run expects a share near what the run got.
	if judgeRow.estimated < 0.4 || all.estimated < 0.25 {
		t.Errorf("the dry run expected %.1f%% of the judge's input and %.1f%% of all cached", 100*judgeRow.estimated, 100*all.estimated)
	}
	if !strings.Contains(dryRun, "\tcached\t") && !strings.Contains(dryRun, " cached ") || !strings.Contains(dryRun, "expected from the endpoints' prompt caches") {
		t.Errorf("the dry run does not show the cached tokens it expects:\n%s", dryRun)
	}
}

// BenchmarkPromptCache prints the per-stage shares of TestPromptCacheShares,
// with the e2e test's one-line answers and with answers of realistic length
// (the judge's candidates, which no two calls of a turn share in the same
// place, then weigh more):
//
//	go test -run '^$' -bench '^BenchmarkPromptCache$' -benchtime 1x ./run/bench/modelstages/
//
// AC3_BENCH_CACHE_INPUT=wildchat-1m-sample50.jsonl runs it on the larger
// sample in fixtures/wildchat instead.
func BenchmarkPromptCache(b *testing.B) {
	for _, answers := range []answerLength{shortAnswers, longAnswers} {
		b.Run(strings.Fields(answers.String())[0], func(b *testing.B) {
			for b.Loop() {
				rows, _ := runE2ECached(b, answers, os.Getenv("AC3_BENCH_CACHE_INPUT"))
				judgeRow, all := figureOf(rows, "judge"), figureOf(rows, "all")
				b.ReportMetric(100*judgeRow.share(), "judge_cached_%")
				b.ReportMetric(100*all.share(), "all_cached_%")
				b.ReportMetric(all.costUSD, "spend_$")
				b.ReportMetric(all.uncachedUSD, "uncached_$")
				fmt.Printf("\nprompt cache on the e2e config (issue 33), %s\n", answers)
				printCacheTable(os.Stdout, rows)
			}
		})
	}
}
