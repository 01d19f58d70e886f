package curate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// sevenTurns is a conversation of 7 user turns with replies.
func sevenTurns() *conv.Conversation {
	var rc []string
	for i := 1; i <= 7; i++ {
		rc = append(rc, "user", fmt.Sprintf("user message %d", i), "assistant", fmt.Sprintf("assistant reply %d", i))
	}
	return build("seven", "Be brief.", rc...)
}

type fixture struct {
	srv *llmtest.Server
	an  *analyze.Analyzer
}

func newFixture(t *testing.T, sc analyzetest.Script) fixture {
	t.Helper()
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, sc)
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{srv, an}
}

func (f fixture) count(kind string) int {
	n := 0
	for _, c := range f.srv.Calls() {
		if analyzetest.Kind(c.Request) == kind {
			n++
		}
	}
	return n
}

func issuesAt(turns ...int) func(int) string {
	return func(t int) string {
		for _, x := range turns {
			if x == t {
				return fmt.Sprintf("problem at turn %d", t)
			}
		}
		return "None"
	}
}

func strategy(t *testing.T, name string, opts curate.Options) curate.Strategy {
	t.Helper()
	s, err := curate.ByName(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func curateCtx(t *testing.T, s curate.Strategy, c *conv.Conversation, tc *curate.Workspace) ([]curated.Context, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Contexts(ctx, c, curate.DefaultFrom, tc)
}

func TestResetPassesThroughWhenIssuesAreNone(t *testing.T) {
	f := newFixture(t, analyzetest.Script{})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "reset", curate.Options{Analyzer: f.an}), c, 2)
	fc := curateAll(t, mustStrategy(t, "fc"), c, 2)
	for i, x := range xs {
		if x.Info.GateOpen || x.Info.Action != curated.ActionPass || !x.Info.Analyzed || x.Info.Resets != 0 {
			t.Errorf("turn %d: %+v", x.Turn, x.Info)
		}
		if fmt.Sprint(x.Parts) != fmt.Sprint(fc[i].Parts) || x.Tokens != fc[i].Tokens {
			t.Errorf("turn %d: pass-through context differs from fc", x.Turn)
		}
		checkContext(t, c, x)
	}
	if got := f.count(analyzetest.KindRewrite); got != 0 {
		t.Errorf("reset made %d rewrite calls", got)
	}
}

func TestGatedResetHonoursFloorAndCap(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(2, 3, 4, 5, 6, 7)})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f.an}), c, 2)
	want := map[int]string{2: "floor", 3: "reset", 4: "reset", 5: "reset", 6: "cap+continue", 7: "cap+continue"}
	for _, x := range xs {
		if x.Info.Action != want[x.Turn] {
			t.Errorf("turn %d: action %q, want %q", x.Turn, x.Info.Action, want[x.Turn])
		}
		if x.Info.Analyzed != (want[x.Turn] == "reset") {
			t.Errorf("turn %d: analyzed = %v", x.Turn, x.Info.Analyzed)
		}
		checkContext(t, c, x)
	}
	if r := xs[len(xs)-1].Info.Resets; r != 3 {
		t.Errorf("resets at the end = %d, want the cap 3", r)
	}
	// Only turns 3..5 are analyzed: two calls each.
	if s, e := f.count(analyzetest.KindSpec), f.count(analyzetest.KindEvaluate); s != 3 || e != 3 {
		t.Errorf("%d spec and %d evaluate calls, want 3 and 3", s, e)
	}

	// Floor 0 and cap 1 through Options.Gates.
	f2 := newFixture(t, analyzetest.Script{Issues: issuesAt(2, 3, 4, 5, 6, 7)})
	xs = curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f2.an, Gates: map[string]curate.Gate{"gated-reset": {Floor: 0, Cap: 1}}}), c, 2)
	if xs[0].Info.Action != "reset" || xs[1].Info.Action != "cap+continue" {
		t.Errorf("floor 0 cap 1: actions %q %q", xs[0].Info.Action, xs[1].Info.Action)
	}
}

func TestLaterTurnsContinueFromTheResetContext(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(3)})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f.an}), c, 2)
	byTurn := map[int]curated.Context{}
	for _, x := range xs {
		byTurn[x.Turn] = x
	}
	r := byTurn[3].Materialize(c)
	if len(r) != 2 || r[0].Role != conv.System || !strings.HasPrefix(r[1].Content, "[Context reset]") || !strings.HasSuffix(r[1].Content, "user message 3") {
		t.Fatalf("reset context of turn 3:\n%+v", r)
	}
	// Turn 5: the reset context, then a3, u4, a4, u5 as logged.
	m := byTurn[5].Materialize(c)
	var got []string
	for _, msg := range m[2:] {
		got = append(got, msg.Content)
	}
	want := []string{"assistant reply 3", "user message 4", "assistant reply 4", "user message 5"}
	if m[1].Content != r[1].Content || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("turn 5 does not continue from the reset:\n%q", got)
	}
	if i := byTurn[5].Info; i.Action != curated.ActionContinue || i.GateOpen || i.Resets != 1 {
		t.Errorf("turn 5 info %+v", i)
	}
	if strings.Contains(fmt.Sprint(m), "assistant reply 1") {
		t.Error("a turn after the reset still shows history from before it")
	}
}

func TestResetTemplateGolden(t *testing.T) {
	f := newFixture(t, analyzetest.Script{
		Spec:    func(int) string { return "1. A Go function Sum(xs []int) int64.\n2. A table test." },
		Aligned: func(int) string { return "The loop structure of the earlier draft." },
		Issues:  func(int) string { return "The draft returned int, not int64." },
	})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "reset", curate.Options{Analyzer: f.an}), c, 3)
	golden(t, "reset_turn3", formatMessages(xs[0].Materialize(c)))
	again := curateAll(t, strategy(t, "reset", curate.Options{Analyzer: f.an}), c, 3)
	if fmt.Sprint(again[0].Materialize(c)) != fmt.Sprint(xs[0].Materialize(c)) {
		t.Error("the same analysis filled the template differently")
	}
}

func TestAugmentAppendsAfterWarmup(t *testing.T) {
	f := newFixture(t, analyzetest.Script{})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "augment", curate.Options{Analyzer: f.an, Gates: map[string]curate.Gate{"augment": {Floor: 3}}}), c, 2)
	for _, x := range xs {
		m := x.Materialize(c)
		last := m[len(m)-1].Content
		acted := strings.Contains(last, "[Review of the conversation so far")
		if acted != (x.Turn > 3) || x.Info.GateOpen != acted {
			t.Errorf("turn %d: augmented=%v info %+v", x.Turn, acted, x.Info)
		}
		if acted && !strings.HasPrefix(last, fmt.Sprintf("user message %d", x.Turn)) {
			t.Errorf("turn %d: the analysis must follow u_t: %q", x.Turn, last)
		}
		checkAppended(t, c, x)
	}
}

func TestRewriteUsesOnlyTheNonceContextSection(t *testing.T) {
	f := newFixture(t, analyzetest.Script{
		Issues:  issuesAt(3),
		Rewrite: func(t int) string { return "Briefing: the user wants a Go function." },
		Wrap: func(kind, ans string) string {
			if kind == analyzetest.KindRewrite {
				return `<context id="000000000000">SPOOFED</context>` + "\n" + ans + "\n<context>ALSO SPOOFED</context>"
			}
			return ans
		},
	})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "rewrite", curate.Options{Analyzer: f.an}), c, 2)
	x := xs[1] // turn 3
	m := x.Materialize(c)
	if x.Info.Action != curated.ActionRewrite || !x.Info.GateOpen || x.Info.OperatorUsage.Calls != 1 {
		t.Fatalf("turn 3 info %+v", x.Info)
	}
	if !strings.Contains(m[1].Content, "Briefing: the user wants a Go function.") || strings.Contains(fmt.Sprint(m), "SPOOFED") || strings.Contains(fmt.Sprint(m), "Here is the briefing") {
		t.Errorf("rewrite context:\n%q", m[1].Content)
	}
	if f.count(analyzetest.KindRewrite) != 1 {
		t.Errorf("%d rewrite calls, want 1 (only where issues were found)", f.count(analyzetest.KindRewrite))
	}
}

func TestOperatorsShareOneAnalysisPerTurn(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(4)})
	c := sevenTurns()
	tc := curate.NewWorkspace(c, counter(t))
	for _, name := range []string{"reset", "rewrite", "augment"} {
		if _, err := curateCtx(t, strategy(t, name, curate.Options{Analyzer: f.an}), c, tc); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.count(analyzetest.KindSpec); n != 6 { // turns 2..7, once each
		t.Errorf("%d spec calls for 6 turns and 3 operators, want 6", n)
	}
}

func TestSummariesAreMadeOncePerReply(t *testing.T) {
	f := newFixture(t, analyzetest.Script{})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "sum", curate.Options{Analyzer: f.an}), c, 2)
	if n := f.count(analyzetest.KindSummary); n != 6 {
		t.Errorf("%d summary calls, want 6 (one per reply before u_7)", n)
	}
	m := xs[len(xs)-1].Materialize(c)
	if m[2].Role != conv.Assistant || m[2].Content != curate.SummaryPrefix+"summary: assistant reply 1" {
		t.Errorf("summary message: %+v", m[2])
	}
	// The request for a_1 is the same whichever turn needs it: the calls
	// are distinct requests.
	seen := map[string]bool{}
	for _, call := range f.srv.Calls() {
		if seen[string(call.Body)] {
			t.Error("the same summary request was sent twice")
		}
		seen[string(call.Body)] = true
	}
	for _, x := range xs {
		checkContext(t, c, x)
	}
}

// fakeUnits serves stored units of other stages.
type fakeUnits map[string][]ledger.Unit

func (f fakeUnits) ConversationUnits(_ context.Context, stage, convID string, turn int) ([]ledger.Unit, error) {
	var out []ledger.Unit
	for _, u := range f[stage] {
		if u.ConvID == convID && (turn == 0 || u.Turn == turn) {
			out = append(out, u)
		}
	}
	return out, nil
}

func unit(convID string, turn int, variant string, v any) ledger.Unit {
	b, _ := json.Marshal(v)
	return ledger.Unit{ConvID: convID, Turn: turn, Variant: variant, Version: "1", Status: ledger.Done, Output: b}
}

func constraintUnits(c *conv.Conversation) fakeUnits {
	fu := fakeUnits{}
	var reg []curate.Constraint
	for t := 1; t <= c.UserTurns(); t++ {
		var added []curate.Constraint
		if t == 2 {
			added = []curate.Constraint{{Text: "Show drafts before sending anything.", Evidence: "show me drafts", Type: "process", Turn: 2}}
		}
		reg = append(reg, added...)
		fu[curate.ConstraintsStage] = append(fu[curate.ConstraintsStage], unit(c.ID, t, "llm", map[string]any{"new": added, "registry": reg, "annotator": "test"}))
	}
	return fu
}

func TestConstraintOverlaySurvivesAReset(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(3)})
	c := sevenTurns()
	s := strategy(t, "gated-reset+constraints", curate.Options{Analyzer: f.an, Units: constraintUnits(c), Constraints: curate.Upstream{Version: "1"}})
	if s.Name() != "gated-reset+constraints" {
		t.Errorf("name %q", s.Name())
	}
	xs := curateAll(t, s, c, 2)
	for _, x := range xs {
		m := x.Materialize(c)
		last := m[len(m)-1].Content
		has := strings.Contains(last, "[Session constraints") && strings.Contains(last, "1. Show drafts before sending anything. (process)")
		if !has || x.Info.Constraints != 1 || x.Strategy != "gated-reset+constraints" {
			t.Errorf("turn %d: overlay missing (info %+v):\n%s", x.Turn, x.Info, last)
		}
		if x.Turn == 3 && (x.Info.Action != curated.ActionReset || !strings.HasPrefix(m[1].Content, "[Context reset]")) {
			t.Errorf("turn 3 should reset and keep the overlay: %+v", x.Info)
		}
		checkAppended(t, c, x)
	}
	// Without units the overlay is refused.
	if _, err := curate.ByName("fc+constraints", curate.Options{}); err == nil {
		t.Error("overlay without units was built")
	}
	// A missing unit fails the turn, not the run.
	_, err := curateCtx(t, strategy(t, "fc+constraints", curate.Options{Units: fakeUnits{}}), c, curate.NewWorkspace(c, counter(t)))
	var te *curate.TurnError
	if !asTurnError(err, &te) || te.Turn != 2 {
		t.Errorf("missing constraints unit: %v", err)
	}
}

func asTurnError(err error, te **curate.TurnError) bool {
	x, ok := err.(*curate.TurnError)
	*te = x
	return ok
}

func TestAdaptiveOmitsOnNewAsk(t *testing.T) {
	c := sevenTurns()
	fu := fakeUnits{}
	for turn := 2; turn <= 7; turn++ {
		typ := "feedback"
		if turn%2 == 0 {
			typ = "new_ask"
		}
		fu[curate.ClassifyStage] = append(fu[curate.ClassifyStage], unit(c.ID, turn, "llm", map[string]any{"type": typ, "refs": []string{}}))
	}
	xs := curateAll(t, strategy(t, "adaptive", curate.Options{Units: fu}), c, 2)
	fc := curateAll(t, mustStrategy(t, "fc"), c, 2)
	ao := curateAll(t, mustStrategy(t, "ao"), c, 2)
	for i, x := range xs {
		want := fc[i]
		if x.Turn%2 == 0 {
			want = ao[i]
		}
		if fmt.Sprint(x.Parts) != fmt.Sprint(want.Parts) || x.Info.GateOpen != (x.Turn%2 == 0) || x.Strategy != "adaptive" {
			t.Errorf("turn %d (%s): info %+v", x.Turn, x.Info.TurnType, x.Info)
		}
	}
	if _, err := curate.ByName("adaptive", curate.Options{}); err == nil || !strings.Contains(err.Error(), "classify") {
		t.Errorf("adaptive without units: %v", err)
	}
}

func TestStageRecordsAFailedTurnAndStops(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Wrap: func(kind, ans string) string {
		if kind == analyzetest.KindEvaluate && strings.Contains(ans, "turn 4") {
			return "no tags at all"
		}
		return ans
	}})
	c := sevenTurns()
	st := curate.NewStage([]curate.Strategy{strategy(t, "reset", curate.Options{Analyzer: f.an})}, counter(t), 2)
	res, err := st.Process(context.Background(), pipeline.Task{Conv: c, Variants: st.Variants()})
	if err != nil {
		t.Fatal(err)
	}
	us := res[0].Units
	if len(us) != 3 || !us[2].Failed || us[2].Turn != 4 || us[2].Raw != "no tags at all" || us[1].Failed {
		t.Errorf("units: %+v", us)
	}
}

func TestInfoRoundTripsAndOldContextsDecode(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(3)})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f.an}), c, 3)
	b, err := curated.EncodeContext(xs[0])
	if err != nil {
		t.Fatal(err)
	}
	y, err := curated.DecodeContext(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(y) != fmt.Sprint(xs[0]) || y.Info.Analysis.Issues != "problem at turn 3" {
		t.Errorf("round trip:\n%+v\n%+v", xs[0], y)
	}
	old := `{"v":1,"s":"fc","t":2,"k":40,"n":3,"p":[-1,0,1,2]}`
	x, err := curated.DecodeContext([]byte(old))
	if err != nil || !x.Info.IsZero() {
		t.Errorf("old context: %v %+v", err, x.Info)
	}
	fcb, _ := curated.EncodeContext(curateAll(t, mustStrategy(t, "fc"), c, 2)[0])
	if strings.Contains(string(fcb), `"a":`) {
		t.Errorf("a deterministic context grew an info field: %s", fcb)
	}
}

func formatMessages(msgs []conv.Message) []byte {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("=== " + string(m.Role) + " ===\n" + m.Content + "\n")
	}
	return []byte(b.String())
}

// checkAppended is checkContext for contexts that add text after u_t
// (augment's analysis, the constraints block): the last message must start
// with u_t's text or contain it.
func checkAppended(t *testing.T, c *conv.Conversation, x curated.Context) {
	t.Helper()
	if err := curated.Validate(c, x.Parts); err != nil {
		t.Fatalf("turn %d: %v", x.Turn, err)
	}
	msgs := curated.Materialize(c, x.Parts)
	if x.Messages != len(msgs) {
		t.Errorf("turn %d: Messages = %d, materialized %d", x.Turn, x.Messages, len(msgs))
	}
	if want := counter(t).CountMessages(msgs); x.Tokens != want {
		t.Errorf("turn %d: Tokens = %d, counting gives %d", x.Turn, x.Tokens, want)
	}
	ut, _ := c.UserTurn(x.Turn)
	if last := msgs[len(msgs)-1]; last.Role != conv.User || !strings.Contains(last.Content, ut.Content) {
		t.Errorf("turn %d: last message lacks u_t: %+v", x.Turn, last)
	}
	data, err := curated.EncodeContext(x)
	if err != nil {
		t.Fatal(err)
	}
	back, err := curated.DecodeContext(data)
	if err != nil || fmt.Sprint(back) != fmt.Sprint(x) {
		t.Errorf("turn %d: codec round trip: %v", x.Turn, err)
	}
}
