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
	"strings"
	"testing"

	"github.com/ac3/ac3/judge/stats"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/curate"
)

// The scripted models. The respondent labels its answer by the context it
// was given: AO when the history has ao's placeholder, LT when it holds at
// most two user messages (lt, and fc at turn 2, where the two contexts are
// the same), FC otherwise. The judge reads the labels of the two
// candidates and the turn number (user messages in the history) and
// answers by position:
//
//	quality:  on turns divisible by 3 it always picks the first shown
//	          (pure position bias); otherwise the higher rank wins,
//	          FC > LT > AO, equal ranks tie;
//	on_topic: tie on odd turns; on even turns the lower rank wins.
var (
	labelRe = regexp.MustCompile(`\[(FC|LT|AO)\] My reply`)
	nonceRe = regexp.MustCompile(`<verdict id="([0-9a-f]+)">`)
	rank    = map[string]int{"FC": 3, "LT": 2, "AO": 1}
)

func respondentAnswer(req llmtest.ChatRequest) string {
	users, label := 0, ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			users++
		}
		if m.Role == "assistant" && m.Content == curate.DefaultPlaceholder {
			label = "AO"
		}
	}
	if label == "" {
		label = "FC"
		if users <= 2 {
			label = "LT"
		}
	}
	last := []rune(req.Last())
	if len(last) > 30 {
		last = last[:30]
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
	nonce := nonceRe.FindStringSubmatch(req.System())
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

func startScripted(t *testing.T) *llmtest.Server {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(
		llmtest.Rule{Name: "judge", SystemContains: "two candidate replies", Func: func(r llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Content: judgeAnswer(r)} }},
		llmtest.Rule{Name: "respondent", Func: func(r llmtest.ChatRequest) llmtest.Reply {
			return llmtest.Reply{Content: respondentAnswer(r), Reasoning: "scripted reasoning"}
		}},
	)
	return srv
}

// expectedLabel is what the scripted respondent says for strategy s at turn t.
func expectedLabel(s string, t int) string {
	switch {
	case s == "ao":
		return "AO"
	case s == "lt" || t == 2:
		return "LT"
	}
	return "FC"
}

type expCounts struct {
	wins, losses, ties  int
	convs               map[string]bool
	vs                  []stats.Verdict
	firstWins, decisive int // single-order verdicts
	pairs, consistent   int
	firstBoth           int
	secondBoth          int
}

func TestEndToEndWildChat(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	raw, err := os.ReadFile("../../fixtures/configs/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Same config, run and output folder moved to the test's temp dir, the
	// input path made absolute.
	cfgText := strings.ReplaceAll(string(raw), "../../runs/", dir+"/")
	fixtures, _ := filepath.Abs("../../fixtures")
	cfgText = strings.ReplaceAll(cfgText, "../wildchat/", fixtures+"/wildchat/")
	cfgPath := filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	getenv := func(k string) string { return vars[k] }

	// The cost up front, before the run exists.
	cfg, err := loadConfig(cfgPath, getenv)
	if err != nil {
		t.Fatal(err)
	}
	var plan bytes.Buffer
	if err := dryRunRespondJudge(context.Background(), &plan, nil, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("dry run:\n%s", plan.String())
	if !strings.Contains(plan.String(), "respond + judge: 189 model calls") { // 21 turns: 3×21 answers + 3×21×2 verdicts
		t.Errorf("dry run plan does not count 189 calls:\n%s", plan.String())
	}
	if srv.Count() != 0 {
		t.Fatalf("the dry run called the model %d times", srv.Count())
	}

	out, err := runAppEnv(t, vars, "run", "--config", cfgPath)
	if err != nil {
		t.Fatalf("ac3 run: %v\n%s", err, out)
	}
	t.Logf("run:\n%s", out)
	calls := srv.Count()

	// Expected numbers from the script, computed from the conversations.
	l, err := ledger.Open(context.Background(), filepath.Join(dir, "e2e.db"), ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	type turnID struct {
		conv string
		turn int
	}
	var turns []turnID
	page, err := l.ConversationPage(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range page {
		for _, tr := range s.Conv.Turns() {
			if tr.Index >= 2 {
				turns = append(turns, turnID{s.Conv.ID, tr.Index})
			}
		}
	}
	st, err := l.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if len(turns) != 21 {
		t.Fatalf("%d turns from round 2 on; the fixture's English conversations have 21", len(turns))
	}

	pairs := [][2]string{{"lt", "ao"}, {"lt", "fc"}, {"fc", "ao"}}
	exp := map[string]*expCounts{}
	judgeCalls := 0
	// Requests that reach the server: identical prompts (fc and lt are the
	// same context at turn 2) are answered once and then from the cache.
	distinct := map[string]bool{}
	for _, tu := range turns {
		for _, s := range []string{"fc", "ao", "lt"} {
			distinct[fmt.Sprint("respond", tu, expectedLabel(s, tu.turn))] = true
		}
	}
	for _, p := range pairs {
		for _, d := range []string{"quality", "on_topic"} {
			exp[p[0]+":"+p[1]+"/"+d] = &expCounts{convs: map[string]bool{}}
		}
		for _, tu := range turns {
			la, lb := expectedLabel(p[0], tu.turn), expectedLabel(p[1], tu.turn)
			identical := la == lb
			if !identical {
				judgeCalls += 2
				distinct[fmt.Sprint("judge", tu, la, lb)] = true
				distinct[fmt.Sprint("judge", tu, lb, la)] = true
			}
			qa, oa := scriptedVerdict(tu.turn, la, lb) // A shown first: positions are strategies
			qb, ob := scriptedVerdict(tu.turn, lb, la) // B shown first: flip back
			flip := map[string]string{"A": "B", "B": "A", "tie": "tie"}
			for d, v := range map[string][2]string{"quality": {qa, flip[qb]}, "on_topic": {oa, flip[ob]}} {
				e := exp[p[0]+":"+p[1]+"/"+d]
				e.convs[tu.conv] = true
				combined := "tie"
				if identical {
					combined = "tie"
				} else if v[0] == v[1] {
					combined = v[0]
				}
				switch combined {
				case "A":
					e.wins++
				case "B":
					e.losses++
				default:
					e.ties++
				}
				o, _ := stats.ParseOutcome(combined)
				e.vs = append(e.vs, stats.Verdict{Conversation: tu.conv, Turn: tu.turn, TurnType: "unclassified", Outcome: o})
				if identical {
					continue
				}
				e.pairs++
				if v[0] == v[1] {
					e.consistent++
				} else if v[0] == "A" && v[1] == "B" {
					e.firstBoth++
				} else if v[0] == "B" && v[1] == "A" {
					e.secondBoth++
				}
				// Single-order verdicts: A shown first, then B shown first.
				for k, shownFirst := range []string{"A", "B"} {
					if v[k] == "tie" {
						continue
					}
					e.decisive++
					if v[k] == shownFirst {
						e.firstWins++
					}
				}
			}
		}
	}
	if calls != len(distinct) {
		t.Errorf("the server got %d requests, want %d distinct prompts", calls, len(distinct))
	}

	var rep map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "e2e", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	num := func(v any) float64 {
		f, ok := v.(float64)
		if !ok {
			return math.NaN()
		}
		return f
	}
	near := func(what string, got any, want float64) {
		t.Helper()
		g := num(got)
		if math.IsNaN(want) {
			if got != nil {
				t.Errorf("%s = %v, want null", what, got)
			}
			return
		}
		if math.Abs(g-want) > 1e-6 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	if rep["conversations"] != 7.0 {
		t.Errorf("conversations = %v, want 7", rep["conversations"])
	}
	set := rep["settings"].(map[string]any)
	near("settings.seed", set["seed"], 20261129)
	near("settings.resamples", set["resamples"], 500)
	jd := rep["judge"].(map[string]any)
	if fmt.Sprint(jd["models"]) != "[gpt-5-mini]" || fmt.Sprint(jd["endpoints"]) != "[judge-model]" || fmt.Sprint(jd["orders"]) != "[both]" {
		t.Errorf("judge info = %v", jd)
	}
	if ps := fmt.Sprint(jd["prompts"]); !strings.HasPrefix(ps, "[pairwise@v1+") {
		t.Errorf("prompts = %s", ps)
	}
	if strings.Contains(string(b), srv.URL) || strings.Contains(string(b), "127.0.0.1") {
		t.Error("report.json names the endpoint's URL")
	}
	rpairs := rep["pairs"].([]any)
	if len(rpairs) != 3 {
		t.Fatalf("%d pairs in the report, want 3", len(rpairs))
	}
	so := stats.Options{Seed: 20261129, Resamples: 500}
	for _, rp := range rpairs {
		pr := rp.(map[string]any)
		near(pr["pair"].(string)+" units_done", pr["units_done"], 21)
		near(pr["pair"].(string)+" units_failed", pr["units_failed"], 0)
		for _, rd := range pr["dimensions"].([]any) {
			dm := rd.(map[string]any)
			key := pr["pair"].(string) + "/" + dm["dimension"].(string)
			e := exp[key]
			ov := dm["overall"].(map[string]any)
			n := e.wins + e.losses + e.ties
			near(key+" n", ov["n"], float64(n))
			near(key+" wins", ov["wins"], float64(e.wins))
			near(key+" losses", ov["losses"], float64(e.losses))
			near(key+" ties", ov["ties"], float64(e.ties))
			near(key+" conversations", ov["conversations"], float64(len(e.convs)))
			near(key+" win_rate", ov["win_rate"], (float64(e.wins)+float64(e.ties)/2)/float64(n))
			near(key+" sign p", ov["sign_test"].(map[string]any)["p"], signP(e.wins, e.wins+e.losses))
			// The bootstrap interval is reproducible from the seed.
			iv := stats.ClusterBootstrap(e.vs, so)
			ci := ov["ci"].(map[string]any)
			near(key+" ci.lo", ci["lo"], round6(iv.Lo))
			near(key+" ci.hi", ci["hi"], round6(iv.Hi))
			wl := wilson(float64(e.wins)+float64(e.ties)/2, n)
			wi := ov["wilson"].(map[string]any)
			near(key+" wilson.lo", wi["lo"], round6(wl[0]))
			near(key+" wilson.hi", wi["hi"], round6(wl[1]))
			if ov["small_n"] != true || !strings.Contains(ov["warning"].(string), "small n") {
				t.Errorf("%s: small n not stated: %v", key, ov["warning"])
			}
			pos := dm["position"].(map[string]any)
			c := pos["consistency"].(map[string]any)
			near(key+" consistency pairs", c["pairs"], float64(e.pairs))
			near(key+" consistent", c["consistent"], float64(e.consistent))
			near(key+" first_both", c["first_both"], float64(e.firstBoth))
			near(key+" second_both", c["second_both"], float64(e.secondBoth))
			rate := math.NaN()
			if e.pairs > 0 {
				rate = float64(e.consistent) / float64(e.pairs)
			}
			near(key+" consistency rate", c["rate"], rate)
			fs := pos["first_shown"].(map[string]any)
			near(key+" decisive", fs["decisive"], float64(e.decisive))
			near(key+" first_wins", fs["first_wins"], float64(e.firstWins))
			share := math.NaN()
			if e.decisive > 0 {
				share = float64(e.firstWins) / float64(e.decisive)
			}
			near(key+" first_share", fs["first_share"], share)
			// By round: per round the same tallies.
			for _, g := range dm["by_round"].([]any) {
				gm := g.(map[string]any)
				var w, lo, ti int
				for _, v := range e.vs {
					if fmt.Sprint(v.Turn) == gm["key"] {
						switch v.Outcome {
						case stats.AWins:
							w++
						case stats.BWins:
							lo++
						default:
							ti++
						}
					}
				}
				near(key+" round "+gm["key"].(string)+" n", gm["n"], float64(w+lo+ti))
				near(key+" round "+gm["key"].(string)+" wins", gm["wins"], float64(w))
				near(key+" round "+gm["key"].(string)+" ties", gm["ties"], float64(ti))
			}
			if tt := dm["by_turn_type"].([]any); len(tt) != 1 || tt[0].(map[string]any)["key"] != "unclassified" {
				t.Errorf("%s: by_turn_type = %v, want one unclassified group (no classify stage)", key, tt)
			}
		}
	}
	// Respond: one sample per context, reasoning kept apart.
	for _, rr := range rep["respond"].([]any) {
		m := rr.(map[string]any)
		near(m["variant"].(string)+" respond units", m["units_done"], 21)
		near(m["variant"].(string)+" with reasoning", m["samples_with_reasoning"], 21)
	}
	// Cost by role: every call counted, dollars as recorded.
	var wantUSD float64
	roleCalls := map[string]int64{}
	for _, u := range st.LLM {
		wantUSD += u.CostUSD
		roleCalls[u.Role] += u.Calls
	}
	if roleCalls["respondent"] != 63 || roleCalls["judge"] != int64(judgeCalls) {
		t.Errorf("calls by role = %v, want respondent 63, judge %d", roleCalls, judgeCalls)
	}
	near("cost total", rep["cost"].(map[string]any)["total_usd"], round6(wantUSD))
	// Tokens per strategy: fc's ratio to itself is 1; ao is smaller.
	for _, tr := range rep["tokens"].([]any) {
		m := tr.(map[string]any)
		near(m["strategy"].(string)+" tokens n", m["n"], 21)
		if m["strategy"] == "fc" {
			near("fc ratio", m["ratio_to_fc"], 1)
		}
	}

	// Training exports: one DPO row per decisive quality verdict (both
	// orders agreed), one SFT row per distinct winning answer.
	wantPrefs, winners := 0, map[string]bool{}
	for _, p := range pairs {
		e := exp[p[0]+":"+p[1]+"/quality"]
		wantPrefs += e.wins + e.losses
		for _, v := range e.vs {
			switch v.Outcome {
			case stats.AWins:
				winners[fmt.Sprint(v.Conversation, v.Turn, p[0])] = true
			case stats.BWins:
				winners[fmt.Sprint(v.Conversation, v.Turn, p[1])] = true
			}
		}
	}
	prefs := readJSONL(t, filepath.Join(dir, "e2e", "preferences.jsonl"))
	if len(prefs) != wantPrefs {
		t.Errorf("%d preference rows, want %d", len(prefs), wantPrefs)
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
	if sft := readJSONL(t, filepath.Join(dir, "e2e", "winners.jsonl")); len(sft) != len(winners) {
		t.Errorf("%d winner rows, want %d", len(sft), len(winners))
	} else if msgs := sft[0]["messages"].([]any); msgs[len(msgs)-1].(map[string]any)["role"] != "assistant" {
		t.Errorf("winner row does not end with the answer: %v", sft[0])
	}
	if _, err := os.Stat(filepath.Join(dir, "e2e", "preferences.parquet")); err != nil {
		t.Error(err)
	}

	// Resuming a finished run calls nothing and writes the same numbers.
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
	for _, f := range []string{"report.html", "report.md"} {
		b, err := os.ReadFile(filepath.Join(dir, "e2e", f))
		if err != nil {
			t.Error(err)
			continue
		}
		// AC3_E2E_KEEP=DIR keeps the report for a look (or a screenshot).
		if keep := os.Getenv("AC3_E2E_KEEP"); keep != "" {
			_ = os.MkdirAll(keep, 0o755)
			_ = os.WriteFile(filepath.Join(keep, f), b, 0o644)
			_ = os.WriteFile(filepath.Join(keep, "report.json"), b2, 0o644)
		}
	}
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
// rational arithmetic (independent of judge/stats).
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
	return round6(math.Min(p, 1))
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

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }
