package pollution_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
	"github.com/ac3/ac3/stages/pollution"
	"github.com/ac3/ac3/stages/respond"
)

// fourRounds has dataset replies to rounds 1–3 and a final u_4 without one.
func fourRounds() *conv.Conversation {
	return &conv.Conversation{ID: "g1", System: "You are a coding assistant.", Messages: []conv.Message{
		{Role: conv.User, Content: "Plot UMAP of my dataframe."},
		{Role: conv.Assistant, Content: "DATA1 umap.UMAP(metric='jaccard')"},
		{Role: conv.User, Content: "Use t-SNE instead."},
		{Role: conv.Assistant, Content: "DATA2 TSNE(metric='euclidean')"},
		{Role: conv.User, Content: "Colour the points by label."},
		{Role: conv.Assistant, Content: "DATA3 POLLUTED TSNE(metric='jaccard')"},
		{Role: conv.User, Content: "Now save it as a PNG."},
	}}
}

// nowReply returns the reply under review in a pollution prompt: the text
// after the "[now]" header of the transcript.
func nowReply(r llmtest.ChatRequest) string {
	_, after, _ := strings.Cut(r.Last(), "[now] assistant")
	before, _, _ := strings.Cut(after, "</transcript>")
	return before
}

// verdicts labels a reply by the marker in it: POLLUTED → code carryover,
// FORMULA → formula carryover, anything else → clean.
func verdicts(r llmtest.ChatRequest) llmtest.Reply {
	body := `{"present": false, "category": "", "sources": [], "confidence": 0.9, "justification": "fresh"}`
	switch now := nowReply(r); {
	case strings.Contains(now, "POLLUTED"):
		body = `{"present": true, "category": "code_carryover", "sources": ["1a"], "confidence": 0.8, "justification": "jaccard again"}`
	case strings.Contains(now, "FORMULA"):
		body = `{"present": true, "category": "formula_carryover", "sources": ["2A"], "confidence": 0.6, "justification": "same formula"}`
	}
	return llmtest.Reply{Content: annotatortest.Answer(annotatortest.NonceOf(r), body)}
}

// respondUnit is a stored respond unit with the given sample texts.
func respondUnit(turn int, texts ...string) ledger.UnitResult {
	o := respond.Output{Strategy: "fc", Respondent: "respondent", Model: "gen-model"}
	for i, s := range texts {
		o.Samples = append(o.Samples, respond.Sample{Index: i, Text: s})
	}
	b, _ := json.Marshal(o)
	return ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Output: b}
}

// seedResponses stores respond's work on g1:
//
//	fc (2 samples):  turns 2, 3, 4
//	ao:              turn 2; turn 3 failed; turn 4 only at an old version
//	fc@big:          turn 2 only
func seedResponses(t *testing.T, l *ledger.Ledger) (map[string]string, int64) {
	t.Helper()
	ctx := annotatortest.Context(t)
	st, ok, err := l.Conversation(ctx, "g1")
	if err != nil || !ok {
		t.Fatalf("conversation g1: %v %v", ok, err)
	}
	versions := map[string]string{"fc": "rv-fc", "ao": "rv-ao", "fc@big": "rv-big"}
	task := func(variant, version string, units ...ledger.UnitResult) ledger.TaskResult {
		return ledger.TaskResult{TaskID: ledger.TaskID{Stage: respond.StageName, Variant: variant, Version: version, ConvSeq: st.Seq},
			ConvID: "g1", Status: ledger.Done, Attempts: 1, Units: units}
	}
	failed := ledger.UnitResult{Turn: 3, Status: ledger.Failed, Attempts: 1, Error: "sample 0: 400 context too long"}
	err = l.CommitTasks(ctx, []ledger.TaskResult{
		task("fc", "rv-fc",
			respondUnit(1, "FC1 round one is never reviewed"),
			respondUnit(2, "FC2-0 POLLUTED", "FC2-1 clean"),
			respondUnit(3, "FC3-0 POLLUTED", "FC3-1 FORMULA"),
			respondUnit(4, "FC4-0 clean", "FC4-1 clean")),
		task("ao", "rv-ao", respondUnit(2, "AO2-0 clean"), failed),
		task("ao", "rv-ao-old", respondUnit(4, "AO4 old")),
		task("fc@big", "rv-big", respondUnit(2, "BIG2-0 POLLUTED")),
	})
	if err != nil {
		t.Fatal(err)
	}
	return versions, st.Seq
}

func TestReviewsGeneratedRepliesPerStrategy(t *testing.T) {
	ctx := annotatortest.Context(t)
	l := annotatortest.Ledger(t, fourRounds())
	versions, _ := seedResponses(t, l)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: verdicts})
	opts := pollution.Options{Dataset: true, Responses: &pollution.ResponseOptions{Units: l, Strategies: []string{"fc", "ao", "fc@big"}, RespondVersions: versions}}
	for range 2 {
		st, err := pollution.New(&pollution.LLM{Client: annotatortest.Client(t, srv)}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pipeline.Run(ctx, l, st, pipeline.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	// Dataset a_2, a_3; fc 3 turns × 2 samples; ao and fc@big turn 2. The
	// second run is a resume and calls nothing.
	if srv.Count() != 10 {
		t.Fatalf("%d calls over two runs, want 10", srv.Count())
	}
	for _, c := range srv.Calls() {
		all := c.Request.System() + c.Request.Last()
		if strings.Contains(all, "fc@big") || strings.Contains(all, "responses:") {
			t.Errorf("the prompt names the strategy:\n%s", all)
		}
		now := nowReply(c.Request)
		if !strings.HasPrefix(now, ", turn ") {
			t.Errorf("no reply under review in:\n%s", c.Request.Last())
		}
		// The history is the dataset's own: a_1 is shown, a_t never is
		// when a generated reply is under review.
		if !strings.Contains(c.Request.Last(), "DATA1") {
			t.Errorf("the original a_1 is not in the history:\n%s", c.Request.Last())
		}
		if strings.Contains(now, "FC3-0") && strings.Contains(c.Request.Last(), "DATA3") {
			t.Errorf("the dataset's a_3 is shown beside the generated reply to turn 3")
		}
	}
	units, err := l.ConversationUnits(ctx, pollution.StageName, "g1", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ledger.Unit{}
	for _, u := range units {
		got[u.Variant+"/"+string(rune('0'+u.Turn))] = u
	}
	if len(got) != 2+3+3+3 {
		t.Fatalf("%d units, want 11: %v", len(got), keys(got))
	}
	fc3 := mustGenerated(t, got["responses:fc/3"])
	if got["responses:fc/3"].Status != ledger.Done || fc3.Respond != "fc" || fc3.Strategy != "fc" || fc3.Model != "gen-model" || len(fc3.Samples) != 2 {
		t.Fatalf("fc turn 3: %+v", fc3)
	}
	if l := fc3.Samples[1].Label; l == nil || l.Category != "formula_carryover" || l.Sources[0] != "2a" || l.Annotator != "llm:test-model" {
		t.Errorf("fc turn 3 sample 1: %+v", fc3.Samples[1])
	}
	for key, want := range map[string]string{
		"responses:ao/3":     "was not generated: sample 0: 400 context too long",
		"responses:ao/4":     "earlier respond configuration",
		"responses:fc@big/3": `no reply of "fc@big" to turn 3`,
		"responses:fc@big/4": `no reply of "fc@big" to turn 4`,
	} {
		u := got[key]
		g := mustGenerated(t, u)
		if u.Status != ledger.Failed || !strings.Contains(u.Error, want) || !strings.Contains(g.Unavailable, want) || len(g.Samples) != 0 {
			t.Errorf("%s: status %s, error %q, output %+v; want failed with %q", key, u.Status, u.Error, g, want)
		}
	}
	if _, err := pollution.Decode(got["responses:fc/2"].Output); err == nil {
		t.Error("a generated unit decoded as a dataset label")
	}
	if _, err := pollution.DecodeGenerated(got["llm/3"].Output); err == nil {
		t.Error("a dataset label decoded as a generated unit")
	}

	// The whole run folds into rates per variant and paired tests.
	var vs []ledger.Variant
	st, _ := pollution.New(&pollution.LLM{Client: annotatortest.Client(t, srv)}, opts)
	for _, v := range st.Variants() {
		vs = append(vs, ledger.Variant(v))
	}
	r := pollution.NewRates()
	if err := l.Units(ctx, pollution.StageName, vs, 0, math.MaxInt64, r.Add); err != nil {
		t.Fatal(err)
	}
	sum := r.Result()
	var names []string
	for _, v := range sum.Variants {
		names = append(names, v.Variant)
	}
	if strings.Join(names, " ") != "llm responses:ao responses:fc responses:fc@big" {
		t.Fatalf("variants %v", names)
	}
	type row struct{ units, replies, failed, unav, polluted, code, formula, convs, convPolluted int }
	want := map[string]row{
		"llm":              {2, 2, 0, 0, 1, 1, 0, 1, 1},
		"responses:ao":     {3, 1, 0, 2, 0, 0, 0, 1, 0},
		"responses:fc":     {3, 6, 0, 0, 3, 2, 1, 1, 1},
		"responses:fc@big": {3, 1, 0, 2, 1, 1, 0, 1, 1},
	}
	for _, v := range sum.Variants {
		g := row{v.Units, v.Replies, v.Failed, v.Unavailable, v.Any.Count, v.Categories[1].Replies.Count, v.Categories[4].Replies.Count, v.Conversations, v.AnyConversations.Count}
		if g != want[v.Variant] || v.Any.Of != v.Replies {
			t.Errorf("%s: %+v, want %+v", v.Variant, g, want[v.Variant])
		}
	}
	fc := sum.Variants[2]
	if fc.Source != "fc" || math.Abs(fc.Categories[1].MeanConfidence-0.8) > 1e-12 || math.Abs(fc.AbsentConfidence-0.9) > 1e-12 {
		t.Errorf("fc confidences: %+v", fc)
	}
	type pair struct{ pairs, pa, pb, onlyA, onlyB int }
	wantPairs := map[string]pair{
		"llm|responses:ao":              {1, 0, 0, 0, 0},
		"llm|responses:fc":              {2, 1, 2, 0, 1}, // turn 2 clean vs polluted, turn 3 both
		"llm|responses:fc@big":          {1, 0, 1, 0, 1},
		"responses:ao|responses:fc":     {1, 0, 1, 0, 1},
		"responses:ao|responses:fc@big": {1, 0, 1, 0, 1},
		"responses:fc|responses:fc@big": {1, 1, 1, 0, 0},
	}
	n := 0
	for _, p := range sum.Pairs {
		if p.Category != "" {
			continue
		}
		n++
		g := pair{p.Pairs, p.PollutedA, p.PollutedB, p.OnlyA, p.OnlyB}
		if w, ok := wantPairs[p.A+"|"+p.B]; !ok || g != w || p.P != 1 {
			t.Errorf("pair %s|%s: %+v p=%v, want %+v p=1", p.A, p.B, g, p.P, w)
		}
	}
	if n != len(wantPairs) || len(sum.Pairs) != n*(1+len(pollution.Categories())) {
		t.Errorf("%d pairs (%d rows), want %d", n, len(sum.Pairs), len(wantPairs))
	}
}

func keys(m map[string]ledger.Unit) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func mustGenerated(t *testing.T, u ledger.Unit) pollution.Generated {
	t.Helper()
	g, err := pollution.DecodeGenerated(u.Output)
	if err != nil {
		t.Fatalf("unit %s turn %d: %v", u.Variant, u.Turn, err)
	}
	return g
}

// TestGeneratedSamplesAndFailures: the samples setting limits what is
// reviewed, a sample whose review fails fails its unit but keeps the other
// sample's label, and an empty reply is never sent.
func TestGeneratedSamplesAndFailures(t *testing.T) {
	ctx := annotatortest.Context(t)
	c := fourRounds()
	units := stored{
		{ConvID: "g1", Turn: 2, Variant: "fc", Version: "v", Status: ledger.Done, Output: respondUnit(2, "S0 clean", "S1 BROKEN", "S2 never").Output},
		{ConvID: "g1", Turn: 3, Variant: "fc", Version: "v", Status: ledger.Done, Output: respondUnit(3, "  ", "T1 clean").Output},
	}
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Match: func(r llmtest.ChatRequest) bool { return strings.Contains(nowReply(r), "BROKEN") }, Reply: llmtest.Reply{Content: "no tags"}})
	srv.Add(llmtest.Rule{Func: verdicts})
	st, err := pollution.New(&pollution.LLM{Client: annotatortest.Client(t, srv)}, pollution.Options{Responses: &pollution.ResponseOptions{Units: units, RespondVersions: map[string]string{"fc": "v"}, Samples: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if vs := st.Variants(); len(vs) != 1 || vs[0].Name != "responses:fc" || !strings.Contains(vs[0].Version, ";on=responses;respond=v;samples=2") {
		t.Fatalf("variants %+v", vs)
	}
	ins, err := st.Reviews(ctx, c)
	if err != nil || len(ins) != 3 || ins[0].Reply != "S0 clean" || ins[2].Reply != "T1 clean" || ins[2].Origin != "fc" || srv.Count() != 0 {
		t.Fatalf("reviews %+v, %v (%d calls)", ins, err, srv.Count())
	}
	res, err := st.Process(ctx, pipeline.Task{Conv: c, Variants: st.Variants()})
	if err != nil {
		t.Fatal(err)
	}
	us := res[0].Units
	if len(us) != 2 {
		t.Fatalf("%d units", len(us))
	}
	// S0 once, S1 three times (two re-asks), T1 once; S2 and the blank reply never.
	if srv.Count() != 5 {
		t.Errorf("%d calls, want 5", srv.Count())
	}
	for _, call := range srv.Calls() {
		if now := nowReply(call.Request); strings.Contains(now, "S2") || strings.TrimSpace(strings.SplitN(now, "\n", 2)[1]) == "" {
			t.Errorf("reviewed %q", now)
		}
	}
	g2, _ := pollution.DecodeGenerated(us[0].Output)
	if !us[0].Failed || !strings.HasPrefix(us[0].Error, "sample 1: ") || us[0].Raw != "no tags" || len(g2.Samples) != 2 || g2.Samples[0].Label == nil || g2.Samples[1].Error == "" {
		t.Errorf("turn 2: %+v %+v", us[0], g2)
	}
	g3, _ := pollution.DecodeGenerated(us[1].Output)
	if !us[1].Failed || !strings.Contains(us[1].Error, "sample 0: the generated reply is empty") || g3.Samples[1].Label == nil {
		t.Errorf("turn 3: %+v %+v", us[1], g3)
	}
}

type stored []ledger.Unit

func (s stored) ConversationUnits(_ context.Context, stage, _ string, _ int) ([]ledger.Unit, error) {
	if stage != respond.StageName {
		return nil, errors.New("read another stage")
	}
	return s, nil
}

func TestNewRefuses(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	a := func() *pollution.LLM { return &pollution.LLM{Client: annotatortest.Client(t, srv)} }
	tests := []struct {
		name string
		opts pollution.Options
		want string
	}{
		{"nothing", pollution.Options{}, "nothing to review"},
		{"no reader", pollution.Options{Responses: &pollution.ResponseOptions{RespondVersions: map[string]string{"fc": "v"}}}, "units"},
		{"respond never ran", pollution.Options{Responses: &pollution.ResponseOptions{Units: stored{}}}, "run respond"},
		{"strategy not answered", pollution.Options{Responses: &pollution.ResponseOptions{Units: stored{}, Strategies: []string{"ao"}, RespondVersions: map[string]string{"fc": "v"}}}, `"ao" has no replies`},
		{"twice", pollution.Options{Responses: &pollution.ResponseOptions{Units: stored{}, Strategies: []string{"fc", "fc"}, RespondVersions: map[string]string{"fc": "v"}}}, "twice"},
		{"negative samples", pollution.Options{Responses: &pollution.ResponseOptions{Units: stored{}, Samples: -1, RespondVersions: map[string]string{"fc": "v"}}}, "samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pollution.New(a(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	// Every planned respond variant, in name order, when none is named.
	st, err := pollution.New(a(), pollution.Options{Dataset: true, Responses: &pollution.ResponseOptions{Units: stored{}, RespondVersions: map[string]string{"fc": "1", "ao": "2"}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range st.Variants() {
		names = append(names, v.Name)
	}
	if strings.Join(names, " ") != "llm responses:ao responses:fc" {
		t.Errorf("variants %v", names)
	}
}

type counter struct {
	n    int64
	done map[string]int64
	mu   sync.Mutex
}

func (c *counter) CountConversations(context.Context) (int64, error) { return c.n, nil }

func (c *counter) TaskCounts(_ context.Context, stage string, v ledger.Variant) (int64, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stage != respond.StageName {
		return 0, 0, errors.New("counted another stage")
	}
	return c.done[v.Name+"@"+v.Version], 1, nil
}

func TestReady(t *testing.T) {
	ctx := annotatortest.Context(t)
	r := &pollution.ResponseOptions{RespondVersions: map[string]string{"fc": "1", "ao": "2"}}
	if err := r.Ready(ctx, &counter{n: 10, done: map[string]int64{"fc@1": 9, "ao@2": 9}}); err != nil {
		t.Errorf("finished respond: %v", err)
	}
	err := r.Ready(ctx, &counter{n: 10, done: map[string]int64{"fc@1": 9, "ao@2": 4}})
	if err == nil || !strings.Contains(err.Error(), "ao (5 of 10 conversations)") || strings.Contains(err.Error(), "fc (") {
		t.Errorf("err = %v", err)
	}
}

func TestVariantNames(t *testing.T) {
	if v := pollution.ResponsesVariant("fc@big"); v != "responses:fc@big" {
		t.Errorf("variant %q", v)
	}
	for name, want := range map[string]string{"responses:fc": "fc", "llm": "", "responses:": ""} {
		got, ok := pollution.RespondVariant(name)
		if got != want || ok != (want != "") {
			t.Errorf("RespondVariant(%q) = %q, %v", name, got, ok)
		}
	}
}
