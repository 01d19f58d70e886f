package constraints_test

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
	"github.com/ac3/ac3/stages/constraints"
)

func TestParallelPromptGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  parse.Output
		turn int
	}{
		{"parallel_turn1", parse.Tags, 1},
		{"parallel_turn3", parse.Tags, 3},
		{"parallel_turn4_json", parse.JSONSchema, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := (&constraints.Proposer{Output: tc.out}).Messages(constraints.InputAt(sample(), tc.turn, nil))
			if err != nil {
				t.Fatal(err)
			}
			prompttest.Golden(t, "testdata/golden/"+tc.name+".txt", msgs)
		})
	}
}

// The parallel prompt shows at most the last 20 earlier user turns, each on
// one line and clipped, and says which were left out.
func TestParallelPromptShowsRecentEarlierTurns(t *testing.T) {
	c := sample()
	c.Messages = c.Messages[:0]
	for i := 1; i <= 25; i++ {
		c.Messages = append(c.Messages, userMsg(fmt.Sprintf("question %d\nsecond line %s", i, strings.Repeat("x", 500))))
	}
	msgs, err := (&constraints.Proposer{}).Messages(constraints.InputAt(c, 25, nil))
	if err != nil {
		t.Fatal(err)
	}
	user := msgs[len(msgs)-1].Content
	for _, want := range []string{"(turns 1 to 4 left out)", "[turn 5] question 5 second line", "[turn 24] question 24", "characters left out"} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	for _, not := range []string{"[turn 4]", "[turn 25]", "question 4\n"} {
		if strings.Contains(user, not) {
			t.Errorf("prompt has %q", not)
		}
	}
}

func TestShippedParallelPromptMeetsItsDeclaration(t *testing.T) {
	if err := prompt.Check(constraints.ParallelPrompt(), constraints.ParallelPromptSpec()); err != nil {
		t.Fatal(err)
	}
}

// A user's template for the parallel prompt renders the same data, cannot
// ask for the registry, and selects the parallel form.
func TestParallelUserTemplate(t *testing.T) {
	own := []byte(`{{define "user"}}Earlier:{{range .Earlier}} ({{.Turn}}) {{.Text}}{{end}}
Now (turn {{.Turn}}): {{.User}}{{end}}`)
	tm, err := prompt.ParseFile(constraints.ParallelPromptSpec(), "mine.tmpl", own)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := (&constraints.Proposer{Template: tm}).Messages(constraints.InputAt(sample(), 2, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := msgs[len(msgs)-1].Content; !strings.HasPrefix(got, "Earlier: (1) For the rest of this session") || !strings.Contains(got, "Now (turn 2): Give an example in Haskell.") {
		t.Errorf("rendered %q", got)
	}
	_, err = prompt.ParseFile(constraints.ParallelPromptSpec(), "reg.tmpl", []byte(`{{.User}}{{range .Registry}}{{.Text}}{{end}}`))
	if err == nil || !strings.Contains(err.Error(), "no request can hold") {
		t.Errorf("a template using .Registry: %v", err)
	}
	st, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{Template: tm}})
	if err != nil || st.Registry() != constraints.RegistryParallel {
		t.Errorf("stage with a parallel template: %v, %v", st, err)
	}
	if v := (&constraints.Proposer{Template: tm}).Version(); !strings.HasPrefix(v, "constraints_parallel@user+") {
		t.Errorf("version %q", v)
	}
}

func TestNewStageForms(t *testing.T) {
	seqTmpl := constraints.Prompt()
	parTmpl := constraints.ParallelPrompt()
	srv := llmtest.New(t, llmtest.Options{})
	online := annotatortest.Client(t, srv)
	batched := batchClient(t, srv, &roundDeferrer{})
	tests := []struct {
		name     string
		o        constraints.Options
		want     string
		rounds10 int
		err      string
	}{
		{"online default", constraints.Options{LLM: &constraints.LLM{Client: online}}, constraints.RegistrySequential, 10, ""},
		{"batch default", constraints.Options{LLM: &constraints.LLM{Client: batched}}, constraints.RegistryParallel, 1, ""},
		{"batch, sequential asked", constraints.Options{LLM: &constraints.LLM{Client: batched}, Registry: constraints.RegistrySequential}, constraints.RegistrySequential, 10, ""},
		{"online, parallel asked", constraints.Options{LLM: &constraints.LLM{Client: online}, Registry: constraints.RegistryParallel}, constraints.RegistryParallel, 1, ""},
		{"batch, the sequential prompt given", constraints.Options{LLM: &constraints.LLM{Client: batched, Template: seqTmpl}}, constraints.RegistrySequential, 10, ""},
		{"online, the parallel prompt given", constraints.Options{LLM: &constraints.LLM{Client: online, Template: parTmpl}}, constraints.RegistryParallel, 1, ""},
		{"heuristic only", constraints.Options{Heuristic: true}, "", 0, ""},
		{"parallel with the sequential prompt", constraints.Options{LLM: &constraints.LLM{Template: seqTmpl}, Registry: constraints.RegistryParallel}, "", 0, "registry parallel sends the constraints_parallel prompt, and the template given is for the constraints prompt"},
		{"unknown form", constraints.Options{LLM: &constraints.LLM{}, Registry: "rolling"}, "", 0, `registry "rolling"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := constraints.NewStage(tc.o)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Registry() != tc.want || st.BatchRoundsFor(10) != tc.rounds10 {
				t.Errorf("registry %q, %d rounds for 10 turns; want %q, %d", st.Registry(), st.BatchRoundsFor(10), tc.want, tc.rounds10)
			}
		})
	}
}

// An extractor that has rendered the sequential prompt keeps it, so it
// cannot become the parallel form's.
func TestNewStageRefusesAUsedExtractor(t *testing.T) {
	used := &constraints.LLM{}
	used.Version() // loads the sequential prompt
	_, err := constraints.NewStage(constraints.Options{LLM: used, Registry: constraints.RegistryParallel})
	if err == nil || !strings.Contains(err.Error(), "already loaded the constraints prompt") {
		t.Fatalf("err = %v", err)
	}
}

// The sequential form's version is the one it had before the parallel form
// existed, so runs made with it keep their units; the parallel form's is
// its own.
func TestFormVersions(t *testing.T) {
	seq, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{}, Registry: constraints.RegistrySequential})
	if err != nil {
		t.Fatal(err)
	}
	par, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{}, Registry: constraints.RegistryParallel})
	if err != nil {
		t.Fatal(err)
	}
	sv, pv := seq.Variants()[0], par.Variants()[0]
	if sv.Name != "llm" || pv.Name != "llm" {
		t.Errorf("variant names %q, %q; both forms are llm", sv.Name, pv.Name)
	}
	if sv.Version != (&constraints.LLM{}).Version() || !strings.HasPrefix(sv.Version, "constraints@v3+") {
		t.Errorf("sequential version %q changed", sv.Version)
	}
	if !strings.HasPrefix(pv.Version, "constraints_parallel@v2+") || !strings.HasSuffix(pv.Version, ";earlier=20x400") {
		t.Errorf("parallel version %q", pv.Version)
	}
}

// parallelReply answers like a model of the parallel form: turn 1 sets a
// constraint, turn 3 another, and turn 4 repeats turn 1's in other words
// (which the registry must not take twice).
func parallelReply(r llmtest.ChatRequest) llmtest.Reply {
	m := turnRE.FindStringSubmatch(r.Last())
	t, _ := strconv.Atoi(m[1])
	body := `{"constraints": []}`
	switch t {
	case 1:
		body = `{"constraints": [{"text": "Reply in bullet points only.", "evidence": "reply in bullet points only", "type": "output", "repeats": 0, "revises": 0}]}`
	case 3:
		body = `{"constraints": [{"text": "End every reply with a one-line summary.", "evidence": "do that from now on", "type": "output"}]}`
	case 4:
		body = `{"constraints": [{"text": "Use only bullet points when you answer.", "evidence": "Now explain functors.", "type": "output", "repeats": 1}]}`
	}
	return llmtest.Reply{Content: annotatortest.Answer(annotatortest.NonceOf(r), body)}
}

// The parallel form keeps the structural guarantee of the sequential one:
// the prompt for turn t holds a_{t-1} and no other assistant, tool or
// system text; and it holds no other turn's answer, only user turns.
func TestParallelStage(t *testing.T) {
	ctx := annotatortest.Context(t)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: parallelReply})
	l := annotatortest.Ledger(t, sample())
	newStage := func() *constraints.Stage {
		st, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{Client: annotatortest.Client(t, srv)}, Registry: constraints.RegistryParallel})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if _, err := pipeline.Run(ctx, l, newStage(), pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if len(calls) != 4 {
		t.Fatalf("%d calls, want one per user turn (4)", len(calls))
	}
	for _, c := range calls {
		body := string(c.Body)
		turn, _ := strconv.Atoi(turnRE.FindStringSubmatch(body)[1])
		for k := 1; k <= 4; k++ {
			marker := fmt.Sprintf("ASSISTANT-MARKER-%d", k)
			if got, want := strings.Contains(body, marker), k == turn-1; got != want {
				t.Errorf("turn %d: %s present = %v, want %v", turn, marker, got, want)
			}
		}
		for _, other := range []string{"TOOL-MARKER", "SYSTEM-MARKER", "one-line summary", "Constraints already recorded"} {
			if strings.Contains(body, other) {
				t.Errorf("turn %d: %q reached the extractor", turn, other)
			}
		}
		if turn == 4 && !strings.Contains(body, "[turn 3] I like how you ended") {
			t.Errorf("turn 4 does not show the earlier user turns")
		}
	}
	want := map[int][]string{1: {"Reply in bullet points only."}, 2: {"Reply in bullet points only."}, 3: {"Reply in bullet points only.", "End every reply with a one-line summary."}, 4: {"Reply in bullet points only.", "End every reply with a one-line summary."}}
	for turn, texts := range want {
		reg, ok, err := constraints.RegistryAsOf(ctx, l, "c1", "llm", turn)
		if err != nil || !ok || strings.Join(textsOf(reg), "|") != strings.Join(texts, "|") {
			t.Errorf("registry as of turn %d: %q (%v, %v), want %q", turn, textsOf(reg), ok, err, texts)
		}
	}
	units, err := l.ConversationUnits(ctx, constraints.StageName, "c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := summarize(units); s.Turns != 4 || s.Constraints != 2 || s.TurnsWithNew != 2 || s.Annotators["llm:test-model"] != 4 {
		t.Errorf("summary = %+v", s)
	}
	if sum, err := pipeline.Run(ctx, l, newStage(), pipeline.Options{}); err != nil || sum.Planned != 0 || srv.Count() != 4 {
		t.Errorf("second run: %+v, %v, %d calls", sum, err, srv.Count())
	}
}

// A turn whose answer stays malformed fails alone; the registry of the
// later turns is built from the others, as in the sequential form.
func TestParallelFailedTurn(t *testing.T) {
	ctx := annotatortest.Context(t)
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		if strings.Contains(r.Last(), "(turn 3)") {
			return llmtest.Reply{Content: "no answer here"}
		}
		return parallelReply(r)
	}})
	l := annotatortest.Ledger(t, sample())
	st, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{Client: annotatortest.Client(t, srv)}, Registry: constraints.RegistryParallel})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Run(ctx, l, st, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	units, err := l.ConversationUnits(ctx, constraints.StageName, "c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if (u.Status == "failed") != (u.Turn == 3) {
			t.Errorf("turn %d: %s", u.Turn, u.Status)
		}
	}
	reg, _, _ := constraints.RegistryAsOf(ctx, l, "c1", "llm", 4)
	if got := textsOf(reg); len(got) != 1 || got[0] != "Reply in bullet points only." {
		t.Errorf("registry at turn 4 = %q", got)
	}
}

func TestParallelAnswersBothOutputs(t *testing.T) {
	annotatortest.Both(t, []annotatortest.BodyCase{
		{Name: "empty list", Body: `{"constraints": []}`},
		{Name: "with relations", Body: `{"constraints": [{"text": "Reply in bullet points only.", "evidence": "reply in bullet points only", "type": "output", "repeats": 0, "revises": 0}]}`},
		{Name: "null relations", Body: `{"constraints": [{"text": "Reply in bullet points only.", "evidence": "reply in bullet points only", "type": "output", "repeats": null, "revises": null}]}`},
		{Name: "unknown type", Body: `{"constraints": [{"text": "x", "evidence": "reply in bullet points only", "type": "style"}]}`, Failed: true},
		{Name: "evidence not in the user turn", Body: `{"constraints": [{"text": "Be kind.", "evidence": "always be kind to me", "type": "preference"}]}`, Failed: true},
		{Name: "revises not a number", Body: `{"constraints": [{"text": "x", "evidence": "reply in bullet points only", "type": "output", "revises": "turn 1"}]}`, Failed: true},
		{Name: "missing list", Body: `{"rules": []}`, Failed: true},
	}, func(t *testing.T, c *llm.Client) pipeline.Unit {
		u, _, _, err := (&constraints.Proposer{Client: c}).Propose(annotatortest.Context(t), constraints.InputAt(sample(), 1, nil))
		if err != nil {
			t.Fatal(err)
		}
		return u
	})
}

// With tags, an answer in the sequential form's shape (no repeats, no
// revises) is read as new constraints: a model or script written for the
// sequential prompt still works.
func TestParallelReadsTheSequentialShape(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: annotatortest.Reply(`{"constraints": [{"text": "Reply in bullet points only.", "evidence": "reply in bullet points only", "type": "output"}]}`)})
	u, props, name, err := (&constraints.Proposer{Client: annotatortest.Client(t, srv)}).Propose(annotatortest.Context(t), constraints.InputAt(sample(), 1, nil))
	if err != nil || u.Failed || len(props) != 1 || props[0].Repeats != 0 || props[0].Revises != 0 || props[0].Turn != 1 || name != "llm:test-model" {
		t.Fatalf("unit %+v, proposals %+v, %q, %v", u, props, name, err)
	}
}

func TestConsolidate(t *testing.T) {
	french := constraints.Constraint{Text: "Always answer in French.", Evidence: "always answer in French", Type: "output", Turn: 1}
	bullets := constraints.Constraint{Text: "Use bullet points in every reply.", Evidence: "bullet points", Type: "output", Turn: 1}
	ask := constraints.Constraint{Text: "Ask before deleting any file.", Evidence: "ask before deleting", Type: "action", Turn: 2}
	prop := func(text, typ string, repeats, revises int) constraints.Proposal {
		return constraints.Proposal{Constraint: constraints.Constraint{Text: text, Evidence: text, Type: typ}, Repeats: repeats, Revises: revises}
	}
	tests := []struct {
		name  string
		reg   []constraints.Constraint
		props []constraints.Proposal
		added []string
		want  []string // texts of the registry as of turn 3
	}{
		{"nothing", []constraints.Constraint{french}, nil, nil, []string{french.Text}},
		{"new", []constraints.Constraint{french}, []constraints.Proposal{prop("Never share my address.", "information", 0, 0)}, []string{"Never share my address."}, []string{french.Text, "Never share my address."}},
		{"restated in the same words", []constraints.Constraint{french}, []constraints.Proposal{prop("always answer in french!", "output", 0, 0)}, nil, []string{french.Text}},
		{"repeat of a recorded turn", []constraints.Constraint{french, ask}, []constraints.Proposal{prop("Reply in French only.", "output", 1, 0)}, nil, []string{french.Text, ask.Text}},
		{"repeat of a turn with nothing recorded", []constraints.Constraint{ask}, []constraints.Proposal{prop("Reply in French only.", "output", 1, 0)}, []string{"Reply in French only."}, []string{ask.Text, "Reply in French only."}},
		{"revision replaces the same type", []constraints.Constraint{french, ask}, []constraints.Proposal{prop("Always answer in English.", "output", 0, 1)}, []string{"Always answer in English."}, []string{ask.Text, "Always answer in English."}},
		{"revision picks the closest of its type", []constraints.Constraint{bullets, french, ask}, []constraints.Proposal{prop("Always answer in German.", "output", 0, 1)}, []string{"Always answer in German."}, []string{bullets.Text, ask.Text, "Always answer in German."}},
		{"revision of another type", []constraints.Constraint{french, ask}, []constraints.Proposal{prop("Delete files without asking.", "preference", 0, 2)}, []string{"Delete files without asking."}, []string{french.Text, "Delete files without asking."}},
		{"revision of a turn with nothing recorded", []constraints.Constraint{ask}, []constraints.Proposal{prop("Always answer in English.", "output", 0, 1)}, []string{"Always answer in English."}, []string{ask.Text, "Always answer in English."}},
		{"revision back to a recorded text", []constraints.Constraint{french, ask}, []constraints.Proposal{prop("Ask before deleting any file.", "action", 0, 1)}, nil, []string{ask.Text}},
		{"two of one turn, the second a restatement", nil, []constraints.Proposal{prop("Reply in French.", "output", 0, 0), prop("reply in french", "output", 0, 0)}, []string{"Reply in French."}, []string{"Reply in French."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.reg)
			added, out := constraints.Consolidate(tc.reg, tc.props, 3)
			if got := strings.Join(textsOf(added), "|"); got != strings.Join(tc.added, "|") {
				t.Errorf("added %q, want %q", got, tc.added)
			}
			if got := strings.Join(textsOf(out), "|"); got != strings.Join(tc.want, "|") {
				t.Errorf("registry %q, want %q", got, tc.want)
			}
			for _, c := range added {
				if c.Turn != 3 {
					t.Errorf("added %q at turn %d", c.Text, c.Turn)
				}
			}
			if fmt.Sprint(tc.reg) != before {
				t.Error("the registry passed in was modified")
			}
		})
	}
}

// roundDeferrer stands in for the run's batch queue: a request it has not
// seen is deferred to the current round; once the round is over (next),
// its requests come back as batch leftovers sent online, which fills the
// cache as an imported batch would.
type roundDeferrer struct {
	mu       sync.Mutex
	answered map[string]bool
	queued   map[string]bool
}

func (d *roundDeferrer) Defer(_ context.Context, r llm.DeferredRequest) (llm.Decision, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.answered[r.Key]:
		return llm.SendOnline, nil
	case d.queued[r.Key]:
		return llm.Waiting, nil
	}
	if d.queued == nil {
		d.queued = map[string]bool{}
	}
	d.queued[r.Key] = true
	return llm.Deferred, nil
}

// next ends a round and reports how many requests it held.
func (d *roundDeferrer) next() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.answered == nil {
		d.answered = map[string]bool{}
	}
	n := len(d.queued)
	for k := range d.queued {
		d.answered[k] = true
	}
	d.queued = nil
	return n
}

func batchClient(tb testing.TB, srv *llmtest.Server, d llm.Deferrer) *llm.Client {
	tb.Helper()
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "test", BaseURL: srv.URL, APIKey: "k", Model: "test-model", Timeout: 5 * time.Second, MaxAttempts: 1, Mode: llm.ModeBatch}},
		Cache:     llm.NewMemCache(),
		Deferrer:  d,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// In batch mode the sequential form needs one round per user turn; the
// parallel form (the default there) one for the whole conversation, and
// its registries are those an online run of the same form writes.
func TestBatchRounds(t *testing.T) {
	for _, tc := range []struct {
		registry string
		rounds   int
		reg      int // constraints as of turn 4
	}{
		// The script repeats turn 1's constraint at turn 4 whatever the
		// prompt shows, and in other words, so only the parallel form,
		// told it is a repeat, keeps it out.
		{constraints.RegistrySequential, 4, 3},
		{"", 1, 2},
		{constraints.RegistryParallel, 1, 2},
	} {
		t.Run(cmp.Or(tc.registry, "default"), func(t *testing.T) {
			ctx := annotatortest.Context(t)
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Func: parallelReply})
			d := &roundDeferrer{}
			l := annotatortest.Ledger(t, sample())
			st, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{Client: batchClient(t, srv, d)}, Registry: tc.registry})
			if err != nil {
				t.Fatal(err)
			}
			rounds := 0
			for {
				sum, err := pipeline.Run(ctx, l, st, pipeline.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Deferred == 0 {
					break
				}
				if rounds++; rounds > 10 {
					t.Fatal("still deferring after 10 rounds")
				}
				d.next()
			}
			if rounds != tc.rounds || st.BatchRoundsFor(4) != tc.rounds {
				t.Errorf("%d rounds (BatchRoundsFor says %d), want %d", rounds, st.BatchRoundsFor(4), tc.rounds)
			}
			if srv.Count() != 4 {
				t.Errorf("%d requests answered, want 4", srv.Count())
			}
			reg, ok, err := constraints.RegistryAsOf(ctx, l, "c1", "llm", 4)
			if err != nil || !ok || len(reg) != tc.reg {
				t.Errorf("registry = %q (%v, %v)", textsOf(reg), ok, err)
			}
		})
	}
}

func textsOf(reg []constraints.Constraint) []string {
	var out []string
	for _, c := range reg {
		out = append(out, c.Text)
	}
	return out
}

func userMsg(s string) conv.Message { return conv.Message{Role: conv.User, Content: s} }
