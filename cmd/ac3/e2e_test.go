package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/respond"
)

// The scripted models. Each answer follows a rule the test can apply to the
// conversations on its own, so every number of the report can be computed
// without the pipeline.
//
// Annotator, classify: the type of u_t follows the length in bytes of its
// first word: 0 → new_ask (no references), 1 → feedback (refers to "1a"),
// 2 → no_feedback (refers to "1u"), modulo 3.
//
// Annotator, constraints: user turns 1, 3 and 5 each set one constraint
// (output, process, preference), quoting the turn's first word.
//
// Analyzer: step 1 is analyzetest's default; step 2 finds no issues ("None",
// the gate stays closed) when t plus the length of u_1's first word leaves 2
// modulo 3, and issues (a reset) otherwise.
//
// Respondent: labels its answer by the context it was given: AO when the
// history has ao's placeholder, GR when it holds gated-reset's reset text,
// FC otherwise (gated-reset before its first reset is fc's context, so the
// answers are identical and their comparison is a tie without a call).
//
// Judge: reads the labels of the two candidates and the turn number (user
// messages in the history) and answers by position:
//
//	quality:  on turns divisible by 3 it always picks the first shown
//	          (pure position bias); otherwise the higher rank wins,
//	          GR > FC > AO, equal ranks tie;
//	on_topic: tie on odd turns; on even turns the lower rank wins.
var (
	labelRe      = regexp.MustCompile(`\[(FC|GR|AO)\] My reply`)
	nonceRe      = regexp.MustCompile(`<verdict id="([0-9a-f]+)">`)
	answerNonce  = regexp.MustCompile(`<answer id="([0-9a-f]+)">`)
	classifyTurn = regexp.MustCompile(`Annotate the user message of turn (\d+), tagged \[now\]`)
	constrTurn   = regexp.MustCompile(`The user message to read \(turn (\d+)\):\n<user_message id="[0-9a-f]+">\n`)
	rank         = map[string]int{"GR": 3, "FC": 2, "AO": 1}
	turnTypes    = []string{"new_ask", "feedback", "no_feedback"}
)

// nonceIn returns the last match of re in the request's last message: the
// form of the answer, with its nonce, comes after everything the prompt
// shows, which may quote such a tag.
func nonceIn(re *regexp.Regexp, req llmtest.ChatRequest) []string {
	ms := re.FindAllStringSubmatch(req.Last(), -1)
	if ms == nil {
		return nil
	}
	return ms[len(ms)-1]
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func scriptedType(u string) string { return turnTypes[len(firstWord(u))%3] }

func scriptedRefs(typ string) []string {
	switch typ {
	case "feedback":
		return []string{"1a"}
	case "no_feedback":
		return []string{"1u"}
	}
	return []string{}
}

// scriptedConstraint is the constraint user turn t sets, if any.
func scriptedConstraint(t int) (text, typ string, ok bool) {
	switch t {
	case 1:
		return "Reply in plain prose without headings.", "output", true
	case 3:
		return "Check every figure before giving it.", "process", true
	case 5:
		return "Prefer short worked examples.", "preference", true
	}
	return "", "", false
}

func scriptedIssues(t int, u1 string) bool { return (t+len(firstWord(u1)))%3 != 2 }

func classifyAnswer(req llmtest.ChatRequest) string {
	n, m := nonceIn(answerNonce, req), classifyTurn.FindStringSubmatch(req.Last())
	_, now, ok := strings.Cut(req.Last(), "[now] user, turn "+m[1]+"\n")
	if n == nil || !ok {
		return "the script could not read this prompt"
	}
	typ := scriptedType(now)
	refs, _ := json.Marshal(scriptedRefs(typ))
	return fmt.Sprintf("Label:\n<answer id=%q>\n{\"type\": %q, \"confidence\": 0.8, \"reason\": \"scripted\", \"refs\": %s}\n</answer>", n[1], typ, refs)
}

func constraintsAnswer(req llmtest.ChatRequest) string {
	n := nonceIn(answerNonce, req)
	loc := constrTurn.FindStringSubmatchIndex(req.Last())
	if n == nil || loc == nil {
		return "the script could not read this prompt"
	}
	t, _ := strconv.Atoi(req.Last()[loc[2]:loc[3]])
	list := "[]"
	if text, typ, ok := scriptedConstraint(t); ok {
		list = fmt.Sprintf(`[{"text": %q, "evidence": %q, "type": %q}]`, text, firstWord(req.Last()[loc[1]:]), typ)
	}
	return fmt.Sprintf("<answer id=%q>\n{\"constraints\": %s}\n</answer>", n[1], list)
}

func evaluateAnswer(req llmtest.ChatRequest) string {
	n, t := analyzetest.Nonce(req), analyzetest.Turn(req)
	_, u1, ok := strings.Cut(req.Last(), `role="user">`+"\n")
	if n == "" || !ok {
		return "the script could not read this prompt"
	}
	issues := "None"
	if scriptedIssues(t, u1) {
		issues = fmt.Sprintf("The replies up to turn %d drift from the request.", t)
	}
	return fmt.Sprintf("<aligned id=%q>\nwork so far\n</aligned>\n<issues id=%q>\n%s\n</issues>", n, n, issues)
}

func respondentAnswer(req llmtest.ChatRequest) string {
	label := "FC"
	for _, m := range req.Messages {
		if m.Role == "assistant" && m.Content == curate.DefaultPlaceholder {
			label = "AO"
		}
		if m.Role == "user" && strings.Contains(m.Content, "[Context reset]") {
			label = "GR"
		}
	}
	last := []rune(req.Last())
	if len(last) > 30 {
		last = last[len(last)-30:]
	}
	return fmt.Sprintf("[%s] My reply to %q.", label, string(last))
}

func byPosition(first, second string) string {
	switch {
	case rank[first] > rank[second]:
		return "A"
	case rank[first] < rank[second]:
		return "B"
	}
	return "tie"
}

func scriptedVerdict(turn int, first, second string) (quality, onTopic string) {
	quality = byPosition(first, second)
	if turn%3 == 0 {
		quality = "A"
	}
	onTopic = "tie"
	if turn%2 == 0 {
		onTopic = byPosition(second, first)
	}
	return quality, onTopic
}

func judgeAnswer(req llmtest.ChatRequest) string {
	nonce := nonceIn(nonceRe, req)
	u := req.Last()
	head, rest, _ := strings.Cut(u, "=== Candidate A ===\n")
	one, rest, _ := strings.Cut(rest, "\n\n=== Candidate B ===\n")
	two, _, _ := strings.Cut(rest, "\n\nGive your verdict")
	turn := strings.Count(head, "--- user ---")
	l1, l2 := labelRe.FindStringSubmatch(one), labelRe.FindStringSubmatch(two)
	if nonce == nil || l1 == nil || l2 == nil {
		return "the script could not read this prompt"
	}
	q, o := scriptedVerdict(turn, l1[1], l2[1])
	return fmt.Sprintf(`Thinking done. <verdict id="%s">{"quality": {"winner": %q, "justification": "scripted.", "confidence": 0.8}, "on_topic": {"winner": %q, "justification": "scripted."}}</verdict>`, nonce[1], q, o)
}

func startScripted(t testing.TB) *llmtest.Server { return startScriptedWith(t, llmtest.Options{}) }

// startScriptedWith is startScripted with the server's options (latency,
// chaos).
func startScriptedWith(t testing.TB, opts llmtest.Options) *llmtest.Server {
	srv := llmtest.New(t, opts)
	reply := func(f func(llmtest.ChatRequest) string) func(llmtest.ChatRequest) llmtest.Reply {
		return func(r llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Content: f(r)} }
	}
	srv.Add(
		llmtest.Rule{Name: "judge", SystemContains: "two candidate replies", Func: reply(judgeAnswer)},
		llmtest.Rule{Name: "classify", Match: func(r llmtest.ChatRequest) bool { return classifyTurn.MatchString(r.Last()) }, Func: reply(classifyAnswer)},
		llmtest.Rule{Name: "constraints", Match: func(r llmtest.ChatRequest) bool { return constrTurn.MatchString(r.Last()) }, Func: reply(constraintsAnswer)},
		llmtest.Rule{Name: "evaluate", Match: func(r llmtest.ChatRequest) bool { return analyzetest.Kind(r) == analyzetest.KindEvaluate }, Func: reply(evaluateAnswer)},
	)
	analyzetest.Install(srv, analyzetest.Script{}) // step 1
	srv.Add(llmtest.Rule{Name: "respondent", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Content: respondentAnswer(r), Reasoning: "scripted reasoning"}
	}})
	return srv
}

// expTurn is what the script makes of one user turn t >= 2.
type expTurn struct {
	conv     string
	turn     int
	typ      string
	analyzed bool // the analyzer ran (past the floor, under the cap)
	open     bool // gated-reset reset here
	resets   int  // resets so far, this turn's included
}

// label is what the scripted respondent says for strategy s at this turn.
func (e expTurn) label(s string) string {
	switch {
	case s == "ao":
		return "AO"
	case s == "gated-reset" && e.resets > 0:
		return "GR"
	}
	return "FC"
}

// expectTurns applies the script to the conversations: turn types, and
// gated-reset's decisions with floor 2 and cap 3.
func expectTurns(convs []*ledgerConv) []expTurn {
	var out []expTurn
	for _, c := range convs {
		resets := 0
		for t := 2; t <= len(c.users); t++ {
			e := expTurn{conv: c.id, turn: t, typ: scriptedType(c.users[t-1])}
			if t > 2 && resets < 3 {
				e.analyzed = true
				e.open = scriptedIssues(t, c.users[0])
			}
			if e.open {
				resets++
			}
			e.resets = resets
			out = append(out, e)
		}
	}
	return out
}

type ledgerConv struct {
	id    string
	users []string // u_1 … u_n
}

// runSnapshot is what the test reads back from a finished run's ledger.
type runSnapshot struct {
	convs   []*ledgerConv
	status  ledger.Status
	tokens  map[string]map[[2]any]int64 // curate variant → (conv, turn) → tokens
	respond map[string][]respond.Output
	// answerLen is the length of each answer as the length-controlled win
	// rate reads it: respond variant → (conv, turn) → characters.
	answerLen map[string]map[[2]any]int
}

func readRun(t *testing.T, path string) runSnapshot {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var s runSnapshot
	page, err := l.ConversationPage(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range page {
		c := &ledgerConv{id: sc.Conv.ID}
		for _, tr := range sc.Conv.Turns() {
			c.users = append(c.users, sc.Conv.Messages[tr.User].Content)
		}
		s.convs = append(s.convs, c)
	}
	if s.status, err = l.Status(ctx); err != nil {
		t.Fatal(err)
	}
	plans, err := l.Plans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.tokens = map[string]map[[2]any]int64{}
	for _, v := range plans[curate.StageName] {
		m := map[[2]any]int64{}
		err := l.Units(ctx, curate.StageName, []ledger.Variant{v}, 0, math.MaxInt64, func(u ledger.Unit) error {
			m[[2]any{u.ConvID, u.Turn}] = u.Tokens
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		s.tokens[v.Name] = m
	}
	s.respond = map[string][]respond.Output{}
	s.answerLen = map[string]map[[2]any]int{}
	for _, v := range plans[respond.StageName] {
		s.answerLen[v.Name] = map[[2]any]int{}
		err := l.Units(ctx, respond.StageName, []ledger.Variant{v}, 0, math.MaxInt64, func(u ledger.Unit) error {
			o, err := respond.Decode(u.Output)
			s.respond[v.Name] = append(s.respond[v.Name], o)
			if err == nil && len(o.Samples) == 1 {
				s.answerLen[v.Name][[2]any{u.ConvID, u.Turn}] = utf8.RuneCountInString(strings.TrimSpace(o.Samples[0].Text))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// e2eConfig writes the e2e config into dir with the run and output moved
// there, the input path made absolute and the budget replaced.
func e2eConfig(t *testing.T, dir string, budget string) string {
	t.Helper()
	raw, err := os.ReadFile("../../fixtures/configs/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgText := strings.ReplaceAll(string(raw), "../../runs/", dir+"/")
	fixtures, _ := filepath.Abs("../../fixtures")
	cfgText = strings.ReplaceAll(cfgText, "../wildchat/", fixtures+"/wildchat/")
	if !strings.Contains(cfgText, "budget_usd: 5\n") {
		t.Fatal("the e2e config no longer sets budget_usd: 5")
	}
	cfgText = strings.Replace(cfgText, "budget_usd: 5\n", "budget_usd: "+budget+"\n", 1)
	path := filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEndToEndWildChat(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	cfgPath := e2eConfig(t, dir, "5")
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}

	// The cost up front, before the run exists: nothing is called or
	// created.
	plan, err := runAppEnv(t, vars, "run", "--config", cfgPath, "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, plan)
	}
	t.Logf("dry run:\n%s", plan)
	for _, want := range []string{"classify+refs:llm", "constraints:llm", "gated-reset", "respond", "judge", "total: ", "$"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the dry run does not say %q", want)
		}
	}
	js, err := runAppEnv(t, vars, "run", "--config", cfgPath, "--dry-run", "--json")
	if err != nil {
		t.Fatalf("dry run --json: %v\n%s", err, js)
	}
	var forecast struct {
		TotalCalls   int64   `json:"total_calls"`
		TotalCostUSD float64 `json:"total_cost_usd"`
		Stages       []struct {
			Stage string `json:"stage"`
			Calls int64  `json:"calls"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(js), &forecast); err != nil {
		t.Fatalf("dry run --json is not JSON: %v\n%s", err, js)
	}
	if srv.Count() != 0 {
		t.Fatalf("the dry run called the model %d times", srv.Count())
	}
	if _, err := os.Stat(filepath.Join(dir, "e2e.db")); err == nil {
		t.Fatal("the dry run created the run")
	}

	out, err := runAppEnv(t, vars, "run", "--config", cfgPath)
	if err != nil {
		t.Fatalf("ac3 run: %v\n%s", err, out)
	}
	t.Logf("run:\n%s", out)
	calls := srv.Count()
	// The forecast counts every stage's calls within 15% of what the run
	// made (it assumes every gated turn is analyzed and changes the context).
	if lo, hi := 0.85*float64(calls), 1.15*float64(calls); float64(forecast.TotalCalls) < lo || float64(forecast.TotalCalls) > hi || forecast.TotalCostUSD <= 0 {
		t.Errorf("the dry run predicted %d calls ($%.4f), the run made %d", forecast.TotalCalls, forecast.TotalCostUSD, calls)
	}
	t.Logf("predicted %d calls, the run made %d; per stage %+v", forecast.TotalCalls, calls, forecast.Stages)
	b, err := os.ReadFile(filepath.Join(dir, "e2e", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	snap := readRun(t, filepath.Join(dir, "e2e.db"))
	want := checkReport(t, b, snap, false)
	if calls != want.distinctCalls {
		t.Errorf("the server got %d requests, want %d distinct prompts", calls, want.distinctCalls)
	}
	checkExports(t, filepath.Join(dir, "e2e"), want)

	// Resuming a finished run calls nothing and writes the same report.
	out, err = runAppEnv(t, vars, "run", "--config", cfgPath)
	if err != nil {
		t.Fatalf("second ac3 run: %v\n%s", err, out)
	}
	if srv.Count() != calls {
		t.Errorf("the second run made %d more calls", srv.Count()-calls)
	}
	b2, _ := os.ReadFile(filepath.Join(dir, "e2e", "report.json"))
	if !bytes.Equal(b, b2) {
		t.Error("report.json changed on a run that did nothing")
	}
	// AC3_E2E_KEEP=DIR keeps the report for a look (or a screenshot).
	if keep := os.Getenv("AC3_E2E_KEEP"); keep != "" {
		_ = os.MkdirAll(keep, 0o755)
		for _, f := range []string{"report.html", "report.md", "report.json"} {
			if b, err := os.ReadFile(filepath.Join(dir, "e2e", f)); err == nil {
				_ = os.WriteFile(filepath.Join(keep, f), b, 0o644)
			}
		}
	}

	// A run stopped by its budget and resumed with a larger one makes no
	// call twice and reaches the same report.
	srv2 := startScripted(t)
	dir2 := t.TempDir()
	vars2 := map[string]string{"AC3_E2E_BASE_URL": srv2.URL}
	cut := fmt.Sprintf("%.4f", want.totalUSD*0.6)
	out, err = runAppEnv(t, vars2, "run", "--config", e2eConfig(t, dir2, cut))
	if run.ExitCode(err) != run.ExitStopped {
		t.Fatalf("budget-capped run: %v (exit status %d, want %d)\n%s", err, run.ExitCode(err), run.ExitStopped, out)
	}
	if !strings.Contains(out, "budget exceeded") {
		t.Errorf("a run capped at $%s did not stop on its budget:\n%s", cut, out)
	}
	if _, err := os.Stat(filepath.Join(dir2, "e2e", "report.json")); err == nil {
		t.Error("the capped run wrote a report before finishing")
	}
	stoppedAt := srv2.Count()
	out, err = runAppEnv(t, vars2, "run", "--config", e2eConfig(t, dir2, "5"))
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	b3, err := os.ReadFile(filepath.Join(dir2, "e2e", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	snap2 := readRun(t, filepath.Join(dir2, "e2e.db"))
	checkReport(t, b3, snap2, true)
	// Every prompt reached the server exactly once: calls in flight when the
	// cap was reached finish and are cached, so the resumed run pays for
	// nothing twice.
	seen, repeats := map[string]bool{}, 0
	for _, call := range srv2.Calls() {
		key := fmt.Sprint(call.Request.Messages)
		if seen[key] {
			repeats++
			if call.Rule != "judge" {
				t.Errorf("a %s prompt was asked again after resuming", call.Rule)
			}
		}
		seen[key] = true
	}
	if stoppedAt == 0 || stoppedAt >= want.distinctCalls || len(seen) != want.distinctCalls || repeats > 0 {
		t.Errorf("stopped after %d requests, %d distinct of %d in all after resuming; want some, then %d distinct and none repeated", stoppedAt, len(seen), srv2.Count(), want.distinctCalls)
	}
	t.Logf("budget stop: %d requests before, %d after, %d asked again", stoppedAt, srv2.Count()-stoppedAt, repeats)
	// The same report, but for the call counts of the cost table.
	callCounts := regexp.MustCompile(`^\.cost\.by_role\.\d+\.(calls|cache_hits|failed|prompt_tokens|completion_tokens|sent_prompt_tokens|endpoint_cached_tokens):`)
	for _, d := range strings.Split(jsonDiff(b, b3), "\n") {
		if d != "" && !callCounts.MatchString(d) {
			t.Errorf("the resumed run's report.json differs from the uninterrupted run's: %s", d)
		}
	}
}

// expected holds what checkReport derived, for the other checks.
type expected struct {
	distinctCalls int
	totalUSD      float64
	quality       map[string][]stats.Verdict // pair → combined quality verdicts, in turns order
	pairs         [][2]string
	turns         []expTurn
}

// checkReport checks every number and flag in report.json against values
// computed from the script and the run's stored conversations and units.
func checkReport(t *testing.T, b []byte, snap runSnapshot, resumed bool) expected {
	t.Helper()
	c := newJSONCheck(t, b)
	turns := expectTurns(snap.convs)
	if len(turns) != 21 {
		t.Fatalf("%d turns from round 2 on; the fixture's English conversations have 21", len(turns))
	}
	so := stats.Options{Seed: 20261129, Resamples: 500}
	c.num("conversations", 7)
	c.num("settings.level", 0.95)
	c.num("settings.resamples", 500)
	c.num("settings.seed", 20261129)
	c.num("settings.min_n", 30)
	c.num("settings.min_conversations", 10)
	c.str("schema", "ac3.report/v3")
	c.str("judge.models", "[gpt-5-mini]")
	c.str("judge.endpoints", "[judge-model]")
	c.str("judge.orders", "[both]")
	c.str("judge.contexts", "[full]")
	c.str("judge.seeds", "[]")
	if ps := fmt.Sprint(c.get("judge.prompts")); !strings.HasPrefix(ps, "[pairwise@v3+") {
		t.Errorf("prompts = %s", ps)
	}
	if strings.Contains(string(b), "127.0.0.1") {
		t.Error("report.json names the endpoint's URL")
	}

	// Calls the server sees: one per distinct prompt (identical contexts
	// are answered once, then from the run's cache).
	distinct := map[string]bool{}
	analyzed := 0
	for _, tu := range turns {
		for _, s := range []string{"fc", "ao", "gated-reset"} {
			distinct[fmt.Sprint("respond", tu.conv, tu.turn, tu.label(s))] = true
		}
		if tu.analyzed {
			analyzed++
		}
	}
	userTurns, constraintsSet := 0, map[string]int{}
	byTurnSet := map[string]int{}
	for _, cv := range snap.convs {
		userTurns += len(cv.users)
		for t := 1; t <= len(cv.users); t++ {
			if _, typ, ok := scriptedConstraint(t); ok {
				constraintsSet[typ]++
				byTurnSet[strconv.Itoa(t)]++
			}
		}
	}
	classifyCalls, analyzerCalls := len(turns), 2*analyzed
	respondCalls := 3 * len(turns)
	respondDistinct := len(distinct)
	// Judge prompts are the history and the two answers: gated-reset:ao
	// before a reset asks what fc:ao asks, and is answered from the cache.

	// Judge: both orders, a win only when both agree.
	pairs := [][2]string{{"gated-reset", "ao"}, {"gated-reset", "fc"}, {"fc", "ao"}}
	flip := map[string]string{"A": "B", "B": "A", "tie": "tie"}
	judgeCalls := 0
	ex := expected{quality: map[string][]stats.Verdict{}, pairs: pairs, turns: turns}
	allVs := map[string]map[string][]stats.Verdict{} // pair → dimension → verdicts in turns order
	for pi, p := range pairs {
		name := p[0] + ":" + p[1]
		c.str(fmt.Sprintf("pairs.%d.pair", pi), name)
		identical := 0
		vs := map[string][]stats.Verdict{}
		single := map[string][]stats.Verdict{}
		type cons struct{ pairs, consistent, firstBoth, secondBoth int }
		cs := map[string]*cons{"quality": {}, "on_topic": {}}
		for _, tu := range turns {
			la, lb := tu.label(p[0]), tu.label(p[1])
			same := la == lb
			if same {
				identical++
			} else {
				judgeCalls += 2
				distinct[fmt.Sprint("judge", tu.conv, tu.turn, la, lb)] = true
				distinct[fmt.Sprint("judge", tu.conv, tu.turn, lb, la)] = true
			}
			qa, oa := scriptedVerdict(tu.turn, la, lb) // A shown first: positions are strategies
			qb, ob := scriptedVerdict(tu.turn, lb, la) // B shown first: flip back
			for d, v := range map[string][2]string{"quality": {qa, flip[qb]}, "on_topic": {oa, flip[ob]}} {
				combined := "tie"
				if !same && v[0] == v[1] {
					combined = v[0]
				}
				o, _ := stats.ParseOutcome(combined)
				vs[d] = append(vs[d], stats.Verdict{Conversation: tu.conv, Turn: tu.turn, TurnType: tu.typ, Outcome: o})
				if same {
					continue
				}
				k := cs[d]
				k.pairs++
				switch {
				case v[0] == v[1]:
					k.consistent++
				case v[0] == "A" && v[1] == "B":
					k.firstBoth++
				case v[0] == "B" && v[1] == "A":
					k.secondBoth++
				}
				// The two single-order verdicts, with the side shown first.
				for i, first := range []stats.Side{stats.SideA, stats.SideB} {
					o, _ := stats.ParseOutcome(v[i])
					single[d] = append(single[d], stats.Verdict{Conversation: tu.conv, Turn: tu.turn, Outcome: o, FirstShown: first})
				}
			}
		}
		ex.quality[name] = vs["quality"]
		allVs[name] = vs
		pp := fmt.Sprintf("pairs.%d.", pi)
		c.num(pp+"units_done", 21)
		c.num(pp+"units_failed", 0)
		c.num(pp+"comparisons", 21)
		c.num(pp+"identical", float64(identical))
		// The scripted respondent answers a context by its label, so equal
		// labels are equal contexts, and every one was a tie without a call.
		c.num(pp+"same_context", float64(identical))
		c.num(pp+"same_context_no_call", float64(identical))
		for di, d := range []string{"quality", "on_topic"} {
			dp := fmt.Sprintf("%sdimensions.%d.", pp, di)
			c.str(dp+"dimension", d)
			c.summary(dp+"overall", vs[d], so)
			// Length-controlled: the same verdicts with the stored answers'
			// lengths, fitted with the same seed.
			var lvs []stats.LengthVerdict
			for _, v := range vs[d] {
				at := [2]any{v.Conversation, v.Turn}
				lvs = append(lvs, stats.LengthVerdict{Conversation: v.Conversation, Outcome: v.Outcome, LenA: snap.answerLen[p[0]][at], LenB: snap.answerLen[p[1]][at]})
			}
			lc, err := stats.LengthControlledWinRate(lvs, so)
			if err != nil {
				t.Fatal(err)
			}
			lp := dp + "length_controlled."
			c.num(lp+"n", float64(len(lvs)))
			c.num(lp+"conversations", float64(lc.Conversations))
			c.num(lp+"invalid", 0)
			c.num(lp+"no_length", 0)
			c.num(lp+"win_rate", lc.WinRate)
			c.num(lp+"lc_win_rate", lc.LCWinRate)
			c.num(lp+"ci.lo", lc.Bootstrap.Lo)
			c.num(lp+"ci.hi", lc.Bootstrap.Hi)
			c.num(lp+"intercept", lc.Intercept)
			c.num(lp+"slope", lc.Slope)
			c.num(lp+"scale", lc.Scale)
			c.flag(lp+"small_n", len(lvs) < 30)
			c.flag(lp+"few_conversations", lc.Conversations < 10)
			// Breakdowns: the same verdicts split by turn type and round,
			// each group resampled with the same seed.
			groups := func(path string, key func(stats.Verdict) string) {
				by := map[string][]stats.Verdict{}
				for _, v := range vs[d] {
					by[key(v)] = append(by[key(v)], v)
				}
				keys := make([]string, 0, len(by))
				for k := range by {
					keys = append(keys, k)
				}
				sort.Slice(keys, func(i, j int) bool {
					a, errA := strconv.Atoi(keys[i])
					b, errB := strconv.Atoi(keys[j])
					if errA == nil && errB == nil {
						return a < b
					}
					return keys[i] < keys[j]
				})
				if n := len(c.get(path).([]any)); n != len(keys) {
					t.Errorf("%s has %d groups, want %v", path, n, keys)
					return
				}
				for i, k := range keys {
					c.str(fmt.Sprintf("%s.%d.key", path, i), k)
					c.summary(fmt.Sprintf("%s.%d", path, i), by[k], so)
				}
			}
			// Examples: each is one of this pair's verdicts on d, found by
			// conversation and turn, with the script's reasoning.
			exs, _ := c.get(dp + "examples").([]any)
			if len(exs) == 0 || len(exs) > 3 {
				t.Errorf("%sexamples: %d, want 1 to 3", dp, len(exs))
			}
			for ei := range exs {
				ep := fmt.Sprintf("%sexamples.%d.", dp, ei)
				cid, _ := c.get(ep + "conversation").(string)
				turn, _ := c.get(ep + "turn").(float64)
				found := false
				for _, v := range vs[d] {
					found = found || (v.Conversation == cid && v.Turn == int(turn))
				}
				if !found {
					t.Errorf("%s: conversation %s turn %v is not one of the pair's verdicts", ep, cid, turn)
				}
				c.num(ep+"turn", turn)
				c.num(ep+"sample", 0)
				c.str(ep+"justification", "scripted.")
			}
			groups(dp+"by_turn_type", func(v stats.Verdict) string { return v.TurnType })
			groups(dp+"by_round", func(v stats.Verdict) string { return strconv.Itoa(v.Turn) })
			k := cs[d]
			cp := dp + "position.consistency."
			c.num(cp+"pairs", float64(k.pairs))
			c.num(cp+"invalid", 0)
			c.num(cp+"consistent", float64(k.consistent))
			c.num(cp+"first_both", float64(k.firstBoth))
			c.num(cp+"second_both", float64(k.secondBoth))
			c.rate(cp+"rate", cp+"wilson", k.consistent, k.pairs)
			known, ties, decisive, firstWins := 0, 0, 0, 0
			for _, v := range single[d] {
				known++
				switch {
				case v.Outcome == stats.Tie:
					ties++
				case (v.Outcome == stats.AWins) == (v.FirstShown == stats.SideA):
					decisive++
					firstWins++
				default:
					decisive++
				}
			}
			fp := dp + "position.first_shown."
			c.num(fp+"known", float64(known))
			c.num(fp+"ties", float64(ties))
			c.num(fp+"decisive", float64(decisive))
			c.num(fp+"first_wins", float64(firstWins))
			c.rate(fp+"first_share", fp+"wilson", firstWins, decisive)
			c.num(fp+"sign_test.k", float64(firstWins))
			c.num(fp+"sign_test.n", float64(decisive))
			c.num(fp+"sign_test.p", signP(firstWins, decisive))
			c.flag(fp+"small_n", decisive < 30)
		}
	}
	// Arms against a common reference: every two pairs that share one
	// strategy, quality rows first. A turn is a success for an arm when it
	// beat the reference; ties are not.
	type combo struct{ x, y, ref, xPair, yPair string }
	combos := []combo{
		{"ao", "fc", "gated-reset", "gated-reset:ao", "gated-reset:fc"},
		{"gated-reset", "fc", "ao", "gated-reset:ao", "fc:ao"},
		{"gated-reset", "ao", "fc", "gated-reset:fc", "fc:ao"},
	}
	beat := func(pair, arm string, o stats.Outcome) bool {
		return (strings.HasPrefix(pair, arm+":") && o == stats.AWins) || (strings.HasSuffix(pair, ":"+arm) && o == stats.BWins)
	}
	c.length("arms", 2*len(combos))
	for di, d := range []string{"quality", "on_topic"} {
		for ci, cb := range combos {
			xs, ys := allVs[cb.xPair][d], allVs[cb.yPair][d]
			xWins, yWins, xOnly, yOnly := 0, 0, 0, 0
			for i := range xs {
				bx, by := beat(cb.xPair, cb.x, xs[i].Outcome), beat(cb.yPair, cb.y, ys[i].Outcome)
				if bx {
					xWins++
				}
				if by {
					yWins++
				}
				switch {
				case bx && !by:
					xOnly++
				case by && !bx:
					yOnly++
				}
			}
			ap := fmt.Sprintf("arms.%d.", di*len(combos)+ci)
			c.str(ap+"dimension", d)
			c.str(ap+"reference", cb.ref)
			c.str(ap+"x", cb.x)
			c.str(ap+"y", cb.y)
			c.str(ap+"x_pair", cb.xPair)
			c.str(ap+"y_pair", cb.yPair)
			c.str(ap+"ties", "losses")
			n := len(turns)
			c.num(ap+"turns", float64(n))
			c.num(ap+"invalid", 0)
			c.num(ap+"concordant", float64(n-xOnly-yOnly))
			c.num(ap+"x_better", float64(xOnly))
			c.num(ap+"y_better", float64(yOnly))
			c.num(ap+"x_rate", float64(xWins)/float64(n))
			c.num(ap+"y_rate", float64(yWins)/float64(n))
			c.num(ap+"diff", float64(xWins-yWins)/float64(n))
			c.num(ap+"p", signP(xOnly, xOnly+yOnly))
		}
	}
	judgeDistinct := len(distinct) - respondDistinct
	// Every annotation and analysis prompt is distinct.
	ex.distinctCalls = len(distinct) + classifyCalls + userTurns + analyzerCalls

	// Generated answers: one sample per context, reasoning kept apart; the
	// context sizes are the curated ones.
	for i, s := range []string{"fc", "ao", "gated-reset"} {
		p := fmt.Sprintf("respond.%d.", i)
		c.str(p+"variant", s)
		c.num(p+"units_done", 21)
		c.num(p+"units_failed", 0)
		c.num(p+"samples", 21)
		c.num(p+"samples_with_reasoning", 21)
		var compl, ctxTok float64
		for _, o := range snap.respond[s] {
			for _, sm := range o.Samples {
				compl += float64(sm.CompletionTokens)
			}
		}
		for _, tk := range snap.tokens[s] {
			ctxTok += float64(tk)
		}
		c.num(p+"mean_completion_tokens", compl/21)
		c.num(p+"mean_context_tokens", ctxTok/21)
	}

	// Context tokens against fc, overall and by round.
	fc := snap.tokens["fc"]
	for i, s := range []string{"fc", "ao", "gated-reset"} {
		p := fmt.Sprintf("tokens.%d.", i)
		c.str(p+"strategy", s)
		var total, fcTotal int64
		var ratios float64
		rounds := map[int][3]int64{} // n, tokens, fc tokens
		for _, tu := range turns {
			k := [2]any{tu.conv, tu.turn}
			tk, f := snap.tokens[s][k], fc[k]
			total += tk
			fcTotal += f
			ratios += float64(tk) / float64(f)
			r := rounds[tu.turn]
			rounds[tu.turn] = [3]int64{r[0] + 1, r[1] + tk, r[2] + f}
			// Before its first reset gated-reset is fc; after, shorter.
			if s == "gated-reset" && (tu.resets == 0) != (tk == f) {
				t.Errorf("gated-reset at %s turn %d: %d tokens, fc %d, resets so far %d", tu.conv, tu.turn, tk, f, tu.resets)
			}
		}
		c.num(p+"n", 21)
		c.num(p+"total", float64(total))
		c.num(p+"mean", float64(total)/21)
		c.num(p+"turns_vs_fc", 21)
		c.num(p+"ratio_to_fc", float64(total)/float64(fcTotal))
		c.num(p+"mean_ratio_to_fc", ratios/21)
		for j, r := range []int{2, 3, 4, 5, 6, 7} {
			q := fmt.Sprintf("%sby_round.%d.", p, j)
			x := rounds[r]
			c.num(q+"round", float64(r))
			c.num(q+"n", float64(x[0]))
			c.num(q+"mean", float64(x[1])/float64(x[0]))
			c.num(q+"ratio_to_fc", float64(x[1])/float64(x[2]))
		}
	}

	// gated-reset's decisions: gate-open rates, resets, analysis cost.
	c.str("gates.0.strategy", "gated-reset")
	c.length("gates", 1)
	open, analyzedOpen := 0, 0
	byType, byRound := map[string][2]int{}, map[int][2]int{}
	lastResets := map[string]int{}
	for _, tu := range turns {
		if tu.open {
			open++
		}
		lastResets[tu.conv] = tu.resets
		if !tu.analyzed {
			continue
		}
		o := map[bool]int{true: 1}[tu.open]
		analyzedOpen += o
		byType[tu.typ] = [2]int{byType[tu.typ][0] + 1, byType[tu.typ][1] + o}
		byRound[tu.turn] = [2]int{byRound[tu.turn][0] + 1, byRound[tu.turn][1] + o}
	}
	c.gate("gates.0.all", open, 21)
	c.gate("gates.0.analyzed", analyzedOpen, analyzed)
	i := 0
	for _, typ := range []string{"feedback", "new_ask", "no_feedback"} {
		if x, ok := byType[typ]; ok {
			c.str(fmt.Sprintf("gates.0.by_turn_type.%d.key", i), typ)
			c.gate(fmt.Sprintf("gates.0.by_turn_type.%d", i), x[1], x[0])
			i++
		}
	}
	for i, r := range []int{3, 4, 5, 6} {
		c.num(fmt.Sprintf("gates.0.by_round.%d.round", i), float64(r))
		c.gate(fmt.Sprintf("gates.0.by_round.%d", i), byRound[r][1], byRound[r][0])
	}
	hist, withReset := map[int]int{}, 0
	for _, n := range lastResets {
		hist[n]++
		if n > 0 {
			withReset++
		}
	}
	c.str("resets.0.strategy", "gated-reset")
	c.num("resets.0.conversations", 7)
	c.num("resets.0.with_reset", float64(withReset))
	c.num("resets.0.resets", float64(open))
	c.num("resets.0.mean_per_conversation", float64(open)/7)
	keys := make([]int, 0, len(hist))
	for k := range hist {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for i, k := range keys {
		c.num(fmt.Sprintf("resets.0.histogram.%d.resets", i), float64(k))
		c.num(fmt.Sprintf("resets.0.histogram.%d.conversations", i), float64(hist[k]))
	}

	// Cost by role, from the run's call log; the analyzer's calls are
	// exactly gated-reset's analyses.
	type roleSum struct {
		calls, hits, failed, prompt, compl, sent, cached int64
		usd                                              float64
	}
	roles := map[string]*roleSum{}
	for _, u := range snap.status.LLM {
		r := roles[u.Role]
		if r == nil {
			r = &roleSum{}
			roles[u.Role] = r
		}
		r.calls += u.Calls
		r.hits += u.CacheHits
		r.failed += u.Failed
		r.prompt += u.PromptTokens
		r.compl += u.CompletionTokens
		r.sent += u.SentPromptTokens
		r.cached += u.SentCachedTokens
		r.usd += u.CostUSD
		ex.totalUSD += u.CostUSD
	}
	wantCalls := map[string]int{"analyzer": analyzerCalls, "annotator": classifyCalls + userTurns, "judge": judgeCalls, "respondent": respondCalls}
	wantHits := map[string]int{"respondent": respondCalls - respondDistinct, "judge": judgeCalls - judgeDistinct}
	for i, role := range []string{"analyzer", "annotator", "judge", "respondent"} {
		p := fmt.Sprintf("cost.by_role.%d.", i)
		r := roles[role]
		if r == nil {
			t.Errorf("no calls recorded for role %s", role)
			continue
		}
		// A resumed run looks up again, in the cache, what the work cut
		// short had asked, and records the calls the stop abandoned as
		// failed: its counts are its own, its dollars the same.
		if !resumed && (r.calls != int64(wantCalls[role]) || r.hits != int64(wantHits[role]) || r.failed != 0) {
			t.Errorf("role %s: %d calls, %d cache hits, %d failed; want %d, %d, 0", role, r.calls, r.hits, r.failed, wantCalls[role], wantHits[role])
		}
		c.str(p+"role", role)
		c.num(p+"calls", float64(r.calls))
		c.num(p+"cache_hits", float64(r.hits))
		c.num(p+"failed", float64(r.failed))
		c.num(p+"prompt_tokens", float64(r.prompt))
		c.num(p+"completion_tokens", float64(r.compl))
		c.num(p+"sent_prompt_tokens", float64(r.sent))
		c.num(p+"endpoint_cached_tokens", float64(r.cached))
		c.num(p+"cost_usd", r.usd)
	}
	c.num("cost.total_usd", ex.totalUSD)
	an := roles["analyzer"]
	c.str("analysis_cost.0.strategy", "gated-reset")
	c.num("analysis_cost.0.turns", 21)
	c.num("analysis_cost.0.analyzed_turns", float64(analyzed))
	c.num("analysis_cost.0.analysis_calls", float64(analyzerCalls))
	c.num("analysis_cost.0.operator_calls", 0)
	c.num("analysis_cost.0.unpriced_calls", 0)
	c.num("analysis_cost.0.prompt_tokens", float64(an.prompt))
	c.num("analysis_cost.0.completion_tokens", float64(an.compl))
	// The analysis is priced at the list price: the prompt tokens the
	// endpoint's cache served (judge-model: input 0.25, cached 0.025 per
	// million) count in full there.
	listUSD := an.usd + float64(an.cached)*(0.25-0.025)/1e6
	c.num("analysis_cost.0.analysis_usd", listUSD)
	c.num("analysis_cost.0.operator_usd", 0)
	c.num("analysis_cost.0.per_analyzed_turn_usd", listUSD/float64(analyzed))
	c.num("analysis_cost.0.per_analyzed_turn_calls", 2)

	// Annotations.
	typeCount := map[string]int{}
	for _, tu := range turns {
		typeCount[tu.typ]++
	}
	tp := "annotations.turn_types."
	c.str(tp+"variant", "llm")
	c.num(tp+"turns", 21)
	c.num(tp+"failed", 0)
	c.num(tp+"conversations", 7)
	for i, typ := range turnTypes {
		p := fmt.Sprintf("%stypes.%d.", tp, i)
		c.str(p+"key", typ)
		c.share(p, typeCount[typ], 21)
	}
	c.str(tp+"annotators.0.key", "llm:gpt-5-mini")
	c.num(tp+"annotators.0.count", 21)
	c.num(tp+"self_contained", float64(typeCount["new_ask"]))
	refs := map[string]int{"1u": typeCount["no_feedback"], "1a": typeCount["feedback"]}
	for i := range c.get(tp + "refs").([]any) {
		p := fmt.Sprintf("%srefs.%d.", tp, i)
		c.num(p+"count", float64(refs[c.get(p+"key").(string)]))
	}
	cp := "annotations.constraints."
	total := 0
	for _, n := range constraintsSet {
		total += n
	}
	c.str(cp+"variant", "llm")
	c.num(cp+"turns", float64(userTurns))
	c.num(cp+"failed", 0)
	c.num(cp+"conversations", 7)
	c.num(cp+"turns_with_new", float64(total))
	c.num(cp+"conversations_with_any", 7) // every conversation has turn 1
	c.num(cp+"constraints", float64(total))
	for i, typ := range []string{"action", "information", "process", "preference", "output"} {
		p := fmt.Sprintf("%sby_type.%d.", cp, i)
		c.str(p+"key", typ)
		c.share(p, constraintsSet[typ], total)
	}
	for i, k := range []string{"1", "3", "5"} {
		c.str(fmt.Sprintf("%sby_turn.%d.key", cp, i), k)
		c.num(fmt.Sprintf("%sby_turn.%d.count", cp, i), float64(byTurnSet[k]))
	}
	c.str(cp+"annotators.0.key", "llm:gpt-5-mini")
	c.num(cp+"annotators.0.count", float64(userTurns))
	if c.get("annotations.pollution") != nil {
		t.Error("a pollution summary without the pollution stage")
	}

	// Every planned stage variant finished on every conversation: its
	// progress row agrees with the run's status and lists no failure.
	c.length("progress", len(snap.status.Stages))
	for i, ss := range snap.status.Stages {
		p := fmt.Sprintf("progress.%d.", i)
		c.str(p+"stage", ss.Stage)
		c.str(p+"variant", ss.Variant)
		c.num(p+"conversations_done", 7)
		c.num(p+"conversations_failed", 0)
		c.num(p+"conversations_not_attempted", 0)
		c.num(p+"units_done", float64(ss.UnitsDone))
		c.num(p+"units_failed", 0)
		c.length(p+"failures", 0)
	}

	for _, p := range c.unchecked() {
		t.Errorf("report.json: %s is not checked against the script", p)
	}
	return ex
}

// checkExports checks the training exports: one DPO row per decisive
// quality verdict (both orders agreed), one SFT row per distinct winning
// answer, and no row twice. A strategy's answer is its label's (see
// expTurn.label), so two verdicts of one turn with the same labels, won
// and lost, are the same row: gated-reset before its first reset builds
// fc's context, and gated-reset:ao then repeats fc:ao's row.
func checkExports(t *testing.T, dir string, ex expected) {
	t.Helper()
	prefKeys, winners := map[string]bool{}, map[string]bool{}
	for _, p := range ex.pairs {
		for i, v := range ex.quality[p[0]+":"+p[1]] {
			tu := ex.turns[i]
			la, lb := tu.label(p[0]), tu.label(p[1])
			switch v.Outcome {
			case stats.AWins:
				prefKeys[fmt.Sprint(v.Conversation, v.Turn, la, lb)] = true
				winners[fmt.Sprint(v.Conversation, v.Turn, la)] = true
			case stats.BWins:
				prefKeys[fmt.Sprint(v.Conversation, v.Turn, lb, la)] = true
				winners[fmt.Sprint(v.Conversation, v.Turn, lb)] = true
			}
		}
	}
	prefs := readJSONL(t, filepath.Join(dir, "preferences.jsonl"))
	if len(prefs) != len(prefKeys) {
		t.Errorf("%d preference rows, want %d", len(prefs), len(prefKeys))
	}
	rows := map[string]bool{}
	for _, row := range prefs {
		b, _ := json.Marshal([]any{row["prompt"], row["chosen"], row["rejected"]})
		if rows[string(b)] {
			t.Errorf("preference row twice: %v", row)
		}
		rows[string(b)] = true
	}
	for _, row := range prefs {
		chosen := row["chosen"].([]any)[0].(map[string]any)
		rejected := row["rejected"].([]any)[0].(map[string]any)
		lc := labelRe.FindStringSubmatch(chosen["content"].(string))
		lr := labelRe.FindStringSubmatch(rejected["content"].(string))
		if chosen["role"] != "assistant" || lc == nil || lr == nil || rank[lc[1]] <= rank[lr[1]] || row["both_orders_agree"] != true || row["dimension"] != "quality" {
			t.Errorf("bad preference row: %v", row)
			break
		}
		if len(row["prompt"].([]any)) == 0 || strings.Contains(chosen["content"].(string), "scripted reasoning") {
			t.Errorf("preference prompt empty or reasoning leaked: %v", row)
			break
		}
	}
	if sft := readJSONL(t, filepath.Join(dir, "winners.jsonl")); len(sft) != len(winners) {
		t.Errorf("%d winner rows, want %d", len(sft), len(winners))
	} else if msgs := sft[0]["messages"].([]any); msgs[len(msgs)-1].(map[string]any)["role"] != "assistant" {
		t.Errorf("winner row does not end with the answer: %v", sft[0])
	}
	if _, err := os.Stat(filepath.Join(dir, "preferences.parquet")); err != nil {
		t.Error(err)
	}
}

// jsonCheck reads report.json by dotted paths ("pairs.0.dimensions.1.n")
// and remembers which numbers and flags were checked, so a number added to
// the report without a check here fails the test.
type jsonCheck struct {
	t    *testing.T
	root any
	seen map[string]bool
}

func newJSONCheck(t *testing.T, b []byte) *jsonCheck {
	var root any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	return &jsonCheck{t: t, root: root, seen: map[string]bool{}}
}

func (c *jsonCheck) get(path string) any {
	v := c.root
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// num checks a number; NaN means the report must say null.
func (c *jsonCheck) num(path string, want float64) {
	c.t.Helper()
	c.seen[path] = true
	got := c.get(path)
	if math.IsNaN(want) {
		if got != nil {
			c.t.Errorf("%s = %v, want null", path, got)
		}
		return
	}
	g, ok := got.(float64)
	if !ok || math.Abs(g-want) > 1e-6 {
		c.t.Errorf("%s = %v, want %v", path, got, want)
	}
}

func (c *jsonCheck) flag(path string, want bool) {
	c.t.Helper()
	c.seen[path] = true
	if got := c.get(path); got != want {
		c.t.Errorf("%s = %v, want %v", path, got, want)
	}
}

func (c *jsonCheck) str(path, want string) {
	c.t.Helper()
	if got := fmt.Sprint(c.get(path)); got != want {
		c.t.Errorf("%s = %s, want %s", path, got, want)
	}
}

func (c *jsonCheck) length(path string, n int) {
	c.t.Helper()
	if l, ok := c.get(path).([]any); !ok || len(l) != n {
		c.t.Errorf("%s has %v entries, want %d", path, c.get(path), n)
	}
}

// rate checks k/n and its 95% Wilson interval.
func (c *jsonCheck) rate(ratePath, wilsonPath string, k, n int) {
	c.t.Helper()
	r, w := math.NaN(), [2]float64{math.NaN(), math.NaN()}
	if n > 0 {
		r, w = float64(k)/float64(n), wilson(float64(k), n)
	}
	c.num(ratePath, r)
	c.num(wilsonPath+".lo", w[0])
	c.num(wilsonPath+".hi", w[1])
}

// share checks a report Share: count, of, rate, Wilson.
func (c *jsonCheck) share(p string, k, n int) {
	c.t.Helper()
	c.num(p+"count", float64(k))
	c.num(p+"of", float64(n))
	c.rate(p+"rate", p+"wilson", k, n)
}

// gate checks a gate-open Rate at path.
func (c *jsonCheck) gate(path string, open, turns int) {
	c.t.Helper()
	c.num(path+".turns", float64(turns))
	c.num(path+".open", float64(open))
	c.rate(path+".rate", path+".wilson", open, turns)
}

// summary checks a win-rate summary against verdicts vs.
func (c *jsonCheck) summary(path string, vs []stats.Verdict, so stats.Options) {
	c.t.Helper()
	var w, l, ti int
	convs := map[string]bool{}
	for _, v := range vs {
		convs[v.Conversation] = true
		switch v.Outcome {
		case stats.AWins:
			w++
		case stats.BWins:
			l++
		default:
			ti++
		}
	}
	n := w + l + ti
	p := path + "."
	c.num(p+"n", float64(n))
	c.num(p+"wins", float64(w))
	c.num(p+"losses", float64(l))
	c.num(p+"ties", float64(ti))
	c.num(p+"invalid", 0)
	c.num(p+"conversations", float64(len(convs)))
	score := float64(w) + float64(ti)/2
	c.num(p+"win_rate", score/float64(n))
	// The bootstrap interval is reproducible from the seed.
	iv := stats.ClusterBootstrap(vs, so)
	c.num(p+"ci.lo", iv.Lo)
	c.num(p+"ci.hi", iv.Hi)
	wl := wilson(score, n)
	c.num(p+"wilson.lo", wl[0])
	c.num(p+"wilson.hi", wl[1])
	c.num(p+"sign_test.k", float64(w))
	c.num(p+"sign_test.n", float64(w+l))
	c.num(p+"sign_test.p", signP(w, w+l))
	c.flag(p+"small_n", n < 30)
	c.flag(p+"few_conversations", len(convs) < 10)
	if n < 30 && !strings.Contains(fmt.Sprint(c.get(p+"warning")), "small n") {
		c.t.Errorf("%s: small n not stated: %v", path, c.get(p+"warning"))
	}
}

// unchecked lists the numbers and flags of the report no check looked at.
func (c *jsonCheck) unchecked() []string {
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(strings.TrimPrefix(path+"."+k, "."), e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s.%d", path, i), e)
			}
		case float64, bool:
			if !c.seen[path] {
				out = append(out, path)
			}
		}
	}
	walk("", c.root)
	sort.Strings(out)
	return out
}

// jsonDiff lists the paths whose values differ between two JSON documents.
func jsonDiff(a, b []byte) string {
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		switch xv := x.(type) {
		case map[string]any:
			yv, _ := y.(map[string]any)
			for k := range xv {
				walk(path+"."+k, xv[k], yv[k])
			}
		case []any:
			yv, _ := y.([]any)
			if len(xv) != len(yv) {
				out = append(out, fmt.Sprintf("%s: %d vs %d entries", path, len(xv), len(yv)))
				return
			}
			for i := range xv {
				walk(fmt.Sprintf("%s.%d", path, i), xv[i], yv[i])
			}
		default:
			if fmt.Sprint(x) != fmt.Sprint(y) {
				out = append(out, fmt.Sprintf("%s: %v vs %v", path, x, y))
			}
		}
	}
	walk("", x, y)
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// signP is the exact two-sided binomial test against 1/2, summed in exact
// rational arithmetic (independent of pipeline/stats).
func signP(k, n int) float64 {
	if n == 0 {
		return 1
	}
	m := min(k, n-k)
	tail := new(big.Int)
	for i := 0; i <= m; i++ {
		tail.Add(tail, new(big.Int).Binomial(int64(n), int64(i)))
	}
	r := new(big.Rat).SetFrac(new(big.Int).Mul(tail, big.NewInt(2)), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	p, _ := r.Float64()
	return math.Min(p, 1)
}

// wilson is the 95% Wilson score interval, written out from its formula.
func wilson(x float64, n int) [2]float64 {
	const z = 1.959963984540054
	nf := float64(n)
	p := x / nf
	c := (p + z*z/(2*nf)) / (1 + z*z/nf)
	h := z / (1 + z*z/nf) * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return [2]float64{c - h, c + h}
}
