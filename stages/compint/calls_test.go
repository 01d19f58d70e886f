package compint_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/compint"
)

// The key phrase of each SC used below: a scripted model follows an SC when
// the phrase is in what it is shown, and otherwise always picks A.
var phrases = map[int]string{1: "just do them", 15: "bullet points only"}

var (
	optionRe = regexp.MustCompile(`(?m)^([AB])\) (.*)$`)
)

// scriptedModel answers the retention judge and the compliance questions
// the way a careful but position-biased model would.
func scriptedModel(set *compint.Set) func(llmtest.ChatRequest) llmtest.Reply {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		if n := req.Nonce("retained"); n != "" {
			_, context, _ := strings.Cut(req.Last(), "<context>")
			context, _, _ = strings.Cut(context, "</context>") // the SC follows the context
			verdict := "NO"
			for _, p := range phrases {
				if strings.Contains(context, p) {
					verdict = "YES"
				}
			}
			return llmtest.Reply{Content: `<retained id="` + n + `">` + verdict + `</retained>`}
		}
		last := req.Last()
		for _, sc := range set.SCs {
			if !strings.Contains(last, sc.Probe) {
				continue
			}
			seen := strings.Contains(strings.Split(last, "Take it that")[0], phrases[sc.ID])
			for _, m := range req.Messages[:len(req.Messages)-1] {
				seen = seen || strings.Contains(m.Content, phrases[sc.ID])
			}
			if !seen {
				return llmtest.Reply{Content: "A"}
			}
			for _, o := range optionRe.FindAllStringSubmatch(last, -1) {
				if o[2] == sc.Correct {
					return llmtest.Reply{Content: "<think>the user set a rule</think>" + o[1]}
				}
			}
		}
		return llmtest.Reply{Content: "I am not sure."}
	}
}

// TestProbesAgainstEndpoint runs the retention judge and all four
// compliance groups through the real client against the in-process
// endpoint and checks every number against values worked out by hand.
func TestProbesAgainstEndpoint(t *testing.T) {
	set, err := compint.Parse("two.json", []byte(`[`+
		`{"id": 1, "type": "Action", "sssc": "Don't ask me to confirm before running commands or making changes, just do them.", "probe": "Delete all the .log files in this folder.", "correct_answer": "Run the delete command directly.", "incorrect_answer": "List the files and ask the user to confirm before deleting."},`+
		`{"id": 15, "type": "Output", "sssc": "Reply in bullet points only, no paragraphs.", "probe": "Explain photosynthesis.", "correct_answer": "A bulleted list of key points.", "incorrect_answer": "A two-paragraph prose answer."}]`))
	if err != nil {
		t.Fatal(err)
	}
	ins := build(t, compint.StitchOptions{TargetTokens: 600, MaxContexts: 1}, compint.Options{}, set, synthCorpus(4, 3, 30))
	if len(ins) != 4 {
		t.Fatalf("%d instances, want 2 baselines and 2 with the SC", len(ins))
	}
	byID := map[string]*compint.Instance{}
	for _, in := range ins {
		byID[in.Conv.ID] = in
	}

	srv := llmtest.New(t, llmtest.Options{})
	defer srv.Close()
	// One malformed answer first: it must be asked again, not guessed at.
	srv.Add(llmtest.Rule{Name: "hedge", LastContains: "photosynthesis", When: llmtest.FirstN(1), Reply: llmtest.Reply{Content: "Either A or B could work."}})
	srv.Add(llmtest.Rule{Name: "model", Func: scriptedModel(set)})
	client, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "local", BaseURL: srv.URL, Model: "test-model", Limits: llm.Limits{Concurrency: 4, RPM: 6000}}},
		Roles:     map[string]llm.RoleBinding{"judge": {Endpoint: "local"}, "respondent": {Endpoint: "local"}},
		Cache:     llm.NewMemCache(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A stand-in compactor that keeps SC 15 and drops SC 1.
	compact := func(in *compint.Instance) []conv.Message {
		note := "Summary: the user has been working through several requests."
		if in.Meta.SCID == 15 {
			note += " They asked: " + in.Meta.SC
		}
		return []conv.Message{{Role: conv.System, Content: note}, {Role: conv.User, Content: in.Meta.Probe}}
	}
	full := func(in *compint.Instance) []conv.Message {
		msgs, ok := in.Conv.ContextBefore(in.Meta.ProbeTurn)
		if !ok {
			t.Fatalf("%s: no turn %d", in.Conv.ID, in.Meta.ProbeTurn)
		}
		return msgs
	}

	run := func() (map[compint.Group]float64, float64, int) {
		sums := map[compint.Group]float64{}
		retained, n := 0.0, 0
		for _, in := range ins {
			if in.Meta.Kind != compint.WithSC {
				continue
			}
			n++
			s, _ := set.Get(in.Meta.SCID)
			baseline := byID[in.Meta.BaselineID]
			contexts := map[compint.Group][]conv.Message{
				compint.LongWithSC: full(in),
				compint.LongNoSC:   full(baseline),
				compint.Compacted:  compact(in),
				compint.UpperBound: compact(in), // UBInjected
			}
			orders, err := compint.Orders(compint.BothOrders, 0, in.Meta.BaseID, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			for g, c := range contexts {
				var choices []compint.Choice
				for _, o := range orders {
					msgs, q, err := compint.ProbeMessages(c, s, g, in.Meta.Framing, o)
					if err != nil {
						t.Fatal(err)
					}
					ch, _, err := llm.CallParsed(ctx, client, llm.Request{Role: "respondent", Stage: "compint", Messages: msgs}, 2, q.Parser())
					if err != nil {
						t.Fatalf("%s %s %s: %v", in.Conv.ID, g, o, err)
					}
					choices = append(choices, ch)
				}
				score, _, _ := compint.Score(choices)
				sums[g] += score
			}
			kept, err := compint.RetentionContext(compact(in), s.Probe)
			if err != nil {
				t.Fatal(err)
			}
			msgs, tg, err := compint.RetentionMessages(s, kept)
			if err != nil {
				t.Fatal(err)
			}
			yes, _, err := llm.CallParsed(ctx, client, llm.Request{Role: "judge", Stage: "compint", Messages: msgs}, 2, compint.RetentionParser(tg))
			if err != nil {
				t.Fatal(err)
			}
			if ev := compint.MatchEvidence(s.Text, kept); ev.Exact != yes {
				t.Errorf("SC %d: judge %v, exact evidence %v", s.ID, yes, ev.Exact)
			}
			if yes {
				retained++
			}
		}
		return sums, retained, n
	}

	sums, retained, n := run()
	// By hand, per SC instance over both orders: with the SC in view the
	// model complies in both (1); without it, it picks A, right in one order
	// of two (½). SC 15 survives compaction, SC 1 does not.
	want := map[compint.Group]float64{
		compint.LongWithSC: 1 + 1,
		compint.LongNoSC:   0.5 + 0.5,
		compint.Compacted:  1 + 0.5,
		compint.UpperBound: 1 + 1,
	}
	for g, w := range want {
		if sums[g] != w {
			t.Errorf("%s: compliance sum %v, want %v", g, sums[g], w)
		}
	}
	rate := func(g compint.Group) float64 { return compint.NewRate(sums[g], n, 0.95).Value }
	if r := compint.NewRate(retained, n, 0.95); r.Value != 0.5 || r.N != 2 {
		t.Errorf("retention %+v, want 1 of 2", r)
	}
	er := compint.EffectRetention(rate(compint.Compacted), rate(compint.LongNoSC), rate(compint.UpperBound), compint.DefaultMinDenominator)
	if !er.Defined || er.Value != 0.5 || er.Denominator != 0.5 {
		t.Errorf("effect retention %+v, want (0.75-0.5)/(1-0.5) = 0.5", er)
	}
	// 2 instances × 4 groups × 2 orders + 2 judge calls + 1 re-asked answer.
	if got := srv.Count(); got != 19 {
		t.Errorf("%d calls, want 19", got)
	}
	// Asking again is answered from the cache: nothing is paid twice.
	run()
	if got := srv.Count(); got != 19 {
		t.Errorf("re-running made %d more calls", got-19)
	}
}
