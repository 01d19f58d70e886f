package curate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// fourTurns: system, then u1 a1 u2 a2 u3 a3 u4 (messages 0..6).
func fourTurns() *conv.Conversation {
	return build("four", "Be brief.",
		"user", "u1", "assistant", "a1", "user", "u2", "assistant", "a2", "user", "u3", "assistant", "a3", "user", "u4")
}

// rendered is a context as "role:content" lines, for comparison with a
// context worked out by hand.
func rendered(c *conv.Conversation, x curated.Context) string {
	var b strings.Builder
	for _, m := range x.Materialize(c) {
		fmt.Fprintf(&b, "%s:%s|", m.Role, m.Content)
	}
	return b.String()
}

func TestRecentNKeepsTheLastNMessages(t *testing.T) {
	c := fourTurns()
	for _, tc := range []struct {
		name    string
		opts    curate.CompactOptions
		want    map[int]string // turn -> context
		version string
	}{
		{"recent-n=3", curate.CompactOptions{}, map[int]string{
			// H^2 = u1 a1: fewer than 3 messages, all kept.
			2: "system:Be brief.|user:u1|assistant:a1|user:u2|",
			// H^3 = u1 a1 u2 a2: the last 3.
			3: "system:Be brief.|assistant:a1|user:u2|assistant:a2|user:u3|",
			// H^4 = u1 .. a3: the last 3.
			4: "system:Be brief.|assistant:a2|user:u3|assistant:a3|user:u4|",
		}, "recent-n1;n=3"},
		{"recent-n=1", curate.CompactOptions{}, map[int]string{
			2: "system:Be brief.|assistant:a1|user:u2|",
			3: "system:Be brief.|assistant:a2|user:u3|",
			4: "system:Be brief.|assistant:a3|user:u4|",
		}, "recent-n1;n=1"},
		// A bare recent-n takes the configured N.
		{"recent-n", curate.CompactOptions{RecentN: 2}, map[int]string{
			2: "system:Be brief.|user:u1|assistant:a1|user:u2|",
			3: "system:Be brief.|user:u2|assistant:a2|user:u3|",
			4: "system:Be brief.|user:u3|assistant:a3|user:u4|",
		}, "recent-n1;n=2"},
		// ... which is the paper's 5 by default: everything here.
		{"recent-n", curate.CompactOptions{}, map[int]string{
			2: "system:Be brief.|user:u1|assistant:a1|user:u2|",
			3: "system:Be brief.|user:u1|assistant:a1|user:u2|assistant:a2|user:u3|",
			4: "system:Be brief.|assistant:a1|user:u2|assistant:a2|user:u3|assistant:a3|user:u4|",
		}, "recent-n1;n=5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := strategy(t, tc.name, curate.Options{Compact: tc.opts})
			if s.Name() != tc.name || s.Version() != tc.version {
				t.Errorf("name %q version %q, want %q %q", s.Name(), s.Version(), tc.name, tc.version)
			}
			xs := curateAll(t, s, c, 2)
			if len(xs) != 3 {
				t.Fatalf("%d contexts, want 3", len(xs))
			}
			for _, x := range xs {
				if got := rendered(c, x); got != tc.want[x.Turn] {
					t.Errorf("turn %d:\n got %s\nwant %s", x.Turn, got, tc.want[x.Turn])
				}
				if x.Strategy != tc.name || !x.Info.IsZero() {
					t.Errorf("turn %d: strategy %q info %+v", x.Turn, x.Strategy, x.Info)
				}
				checkContext(t, c, x)
			}
		})
	}
}

func TestCompactorSpecs(t *testing.T) {
	specs, err := curate.ParseList("recent-n=5, recent-n=10+constraints, extract-sc=plugin=lingua, llm-compact=pi-mono")
	if err != nil {
		t.Fatal(err)
	}
	want := []curate.Spec{{Name: "recent-n=5"}, {Name: "recent-n=10", Constraints: true}, {Name: "extract-sc=plugin=lingua"}, {Name: "llm-compact=pi-mono"}}
	if fmt.Sprint(specs) != fmt.Sprint(want) {
		t.Errorf("specs %v, want %v", specs, want)
	}
	for name, model := range map[string]bool{
		"recent-n=5": false, "llm-compact": true, "llm-compact=x+constraints": true, "extract-sc": true,
		"extract-sc=recent-n=3": false, "extract-sc=llm-compact=x": true, "plugin=lingua": false,
	} {
		if got := curate.NeedsModel(name); got != model {
			t.Errorf("NeedsModel(%q) = %v", name, got)
		}
	}
	units := fakeUnits{}
	for _, tc := range []struct{ name, err string }{
		{"recent-n=0", "at least 1"},
		{"recent-n=-2", "at least 1"},
		{"recent-n=five", "whole number"},
		{"plugin=nope", `no plug-in "nope"`},
		{"plugin", `no plug-in ""`},
		{"extract-sc=fc", "must name another compactor"},
		{"extract-sc=extract-sc", "must name another compactor"},
		{"extract-sc=recent-n=0", "at least 1"},
		{"llm-compact", "needs a model"},
		{"extract-sc", "needs a model"},
		{"recent-m=3", "unknown strategy"},
	} {
		_, err := curate.ByName(tc.name, curate.Options{Units: units})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
	// extract-sc reads the constraints stage.
	if _, err := curate.ByName("extract-sc=recent-n=2", curate.Options{}); !errors.Is(err, curate.ErrNeedsConstraints) {
		t.Errorf("extract-sc without units: %v", err)
	}
}

func TestExtractSCAppendsTheRegistryAfterTheCompactedHistory(t *testing.T) {
	block := "[Session constraints: instructions the user gave earlier in this conversation that still apply to every reply]\n" +
		"1. Show drafts before sending anything. (process)\n[End of session constraints]"
	c := fourTurns()
	noReply := build("noreply", "", "user", "u1", "user", "u2", "assistant", "a2", "user", "u3")
	units := constraintUnits(c)
	for k, v := range constraintUnits(noReply) {
		units[k] = append(units[k], v...)
	}
	opts := curate.Options{Units: units, Constraints: curate.Upstream{Version: "1"}}
	for _, tc := range []struct {
		name string
		c    *conv.Conversation
		want map[int]string
	}{
		{"extract-sc=recent-n=1", c, map[int]string{
			// Turn 1: nothing before u1 and no constraint yet.
			1: "system:Be brief.|user:u1|",
			// From turn 2 the registry holds the constraint stated there;
			// the last kept message is the assistant's, so the block joins it.
			2: "system:Be brief.|assistant:a1\n\n" + block + "|user:u2|",
			3: "system:Be brief.|assistant:a2\n\n" + block + "|user:u3|",
			4: "system:Be brief.|assistant:a3\n\n" + block + "|user:u4|",
		}},
		// The kept message is the user's: the block is a message of its own.
		{"extract-sc=recent-n=1", noReply, map[int]string{
			1: "user:u1|",
			2: "user:u1|assistant:" + block + "|user:u2|",
			3: "assistant:a2\n\n" + block + "|user:u3|",
		}},
	} {
		t.Run(tc.c.ID, func(t *testing.T) {
			s := strategy(t, tc.name, opts)
			xs := curateAll(t, s, tc.c, 1)
			if len(xs) != len(tc.want) {
				t.Fatalf("%d contexts, want %d", len(xs), len(tc.want))
			}
			for _, x := range xs {
				if got := rendered(tc.c, x); got != tc.want[x.Turn] {
					t.Errorf("turn %d:\n got %q\nwant %q", x.Turn, got, tc.want[x.Turn])
				}
				wantN := 1
				if x.Turn == 1 {
					wantN = 0
				}
				if x.Strategy != tc.name || x.Info.Constraints != wantN || x.Info.Operator != "recent-n=1" {
					t.Errorf("turn %d: strategy %q info %+v", x.Turn, x.Strategy, x.Info)
				}
				checkContext(t, tc.c, x)
			}
		})
	}
	s := strategy(t, "extract-sc=recent-n=1", opts)
	if v := s.Version(); !strings.Contains(v, "recent-n1;n=1") || !strings.Contains(v, "constraints=") {
		t.Errorf("version %q does not cover the compactor and the registry", v)
	}
	// A missing constraints unit fails the turn, not the run.
	_, err := curateCtx(t, strategy(t, "extract-sc=recent-n=1", curate.Options{Units: fakeUnits{}}), c, curate.NewWorkspace(c, counter(t)))
	var te *curate.TurnError
	if !errors.As(err, &te) || te.Turn != 2 {
		t.Errorf("missing constraints unit: %v", err)
	}
}

// compactServer answers compaction requests with a summary naming how many
// history lines the request showed and its last line.
func compactServer(t *testing.T) *llmtest.Server {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{
		Name:  "compact",
		Match: func(r llmtest.ChatRequest) bool { return strings.Contains(r.System(), "You compress the history") },
		Func: func(r llmtest.ChatRequest) llmtest.Reply {
			_, after, _ := strings.Cut(r.Last(), "<history>\n")
			hist, _, _ := strings.Cut(after, "\n</history>")
			lines := strings.Split(hist, "\n")
			return llmtest.Reply{Content: fmt.Sprintf("  %d lines, last %s  ", len(lines), lines[len(lines)-1])}
		},
	})
	return srv
}

func TestLLMCompactSummarizesTheHistory(t *testing.T) {
	srv := compactServer(t)
	cache := llm.NewMemCache()
	an, err := analyze.New(analyzetest.Client(t, srv, cache), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := fourTurns()
	s := strategy(t, "llm-compact", curate.Options{Analyzer: an})
	want := map[int]string{
		1: "system:Be brief.|user:u1|", // no history: no call
		2: "system:Be brief.|assistant:2 lines, last [assistant]: a1|user:u2|",
		3: "system:Be brief.|assistant:4 lines, last [assistant]: a2|user:u3|",
		4: "system:Be brief.|assistant:6 lines, last [assistant]: a3|user:u4|",
	}
	for run := 1; run <= 2; run++ {
		xs := curateAll(t, s, c, 1)
		for _, x := range xs {
			if got := rendered(c, x); got != want[x.Turn] {
				t.Errorf("run %d turn %d:\n got %q\nwant %q", run, x.Turn, got, want[x.Turn])
			}
			u := x.Info.OperatorUsage
			calls, cached := 1, 0
			if x.Turn == 1 {
				calls = 0
			} else if run == 2 {
				cached = 1
			}
			if x.Info.Operator != "llm-compact" || x.Info.Action != curate.ActionCompact || u.Calls != calls || u.Cached != cached {
				t.Errorf("run %d turn %d: info %+v", run, x.Turn, x.Info)
			}
			checkContext(t, c, x)
		}
	}
	// Three turns had a history; the second run was answered by the cache.
	if n := srv.Count(); n != 3 {
		t.Errorf("server got %d requests, want 3", n)
	}
	// The request: our system message, then the transcript in the user
	// message, in the reference code's "[role]: content" lines.
	call := srv.Calls()[0].Request
	if len(call.Messages) != 2 || !strings.Contains(call.Last(), "<history>\n[user]: u1\n[assistant]: a1\n</history>") {
		t.Errorf("request %+v", call.Messages)
	}
}

func TestLLMCompactPromptFile(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "the summary"}})
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	file := func(text string) *prompt.Template {
		tm, err := prompt.ParseFile(curate.CompactPromptSpec, "mine.txt", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	c := fourTurns()
	turn3 := c.Turns()[2]
	for _, tc := range []struct {
		name    string
		opts    curate.CompactOptions
		request []string // role:content of the compaction request before turn 3
	}{
		// A plain-text prompt: the transcript as a user message, then it.
		{"llm-compact", curate.CompactOptions{Prompt: file("Summarize the above.")},
			[]string{"user:[user]: u1\n[assistant]: a1\n[user]: u2\n[assistant]: a2", "user:Summarize the above."}},
		// history: messages sends the history as chat messages after the
		// prompt's system message.
		{"llm-compact", curate.CompactOptions{History: curate.HistoryMessages, Prompt: file(`{{define "system"}}You summarize.{{end}}{{define "user"}}Now summarize.{{end}}`)},
			[]string{"system:You summarize.", "user:u1", "assistant:a1", "user:u2", "assistant:a2", "user:Now summarize."}},
		// A prompt that places the transcript itself is sent alone.
		{"llm-compact", curate.CompactOptions{History: curate.HistoryMessages, Prompt: file("History:\n{{.Transcript}}\nSummarize.")},
			[]string{"user:History:\n[user]: u1\n[assistant]: a1\n[user]: u2\n[assistant]: a2\nSummarize."}},
		// A named prompt.
		{"llm-compact=short", curate.CompactOptions{Prompts: map[string]*prompt.Template{"short": file("Be short.")}},
			[]string{"user:[user]: u1\n[assistant]: a1\n[user]: u2\n[assistant]: a2", "user:Be short."}},
	} {
		s := strategy(t, tc.name, curate.Options{Analyzer: an, Compact: tc.opts}).(*curate.LLMCompact)
		msgs, err := s.Request(c.Messages[:turn3.User])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, string(m.Role)+":"+m.Content)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.request) {
			t.Errorf("%s %+v:\n got %q\nwant %q", tc.name, tc.opts, got, tc.request)
		}
		x := curateAll(t, s, c, 3)[0]
		if r := rendered(c, x); !strings.Contains(r, "assistant:the summary|user:u3|") {
			t.Errorf("context %q", r)
		}
	}
	// The prompt's text is in the version, so an edited file is not served
	// from old units; so are the layout and the role.
	offline, err := analyze.New(nil, analyze.Options{}) // versions only: no client to check the role against
	if err != nil {
		t.Fatal(err)
	}
	v := func(o curate.CompactOptions) string {
		return strategy(t, "llm-compact", curate.Options{Analyzer: offline, Compact: o}).Version()
	}
	versions := map[string]bool{}
	for _, o := range []curate.CompactOptions{{}, {Prompt: file("Summarize.")}, {Prompt: file("Summarize!")},
		{Prompt: file("Summarize!"), History: curate.HistoryMessages}, {Role: "compactor"}} {
		versions[v(o)] = true
	}
	if len(versions) != 5 {
		t.Errorf("versions not distinct: %v", versions)
	}
	if _, err := curate.ByName("llm-compact", curate.Options{Analyzer: an, Compact: curate.CompactOptions{Role: "compactor"}}); err == nil || !strings.Contains(err.Error(), `role "compactor"`) {
		t.Errorf("a role with no model: %v", err)
	}
	if _, err := curate.ByName("llm-compact", curate.Options{Analyzer: an, Compact: curate.CompactOptions{History: "inline"}}); err == nil {
		t.Error("a bad history layout was accepted")
	}
	if _, err := curate.ByName("llm-compact=nope", curate.Options{Analyzer: an}); err == nil || !strings.Contains(err.Error(), `no compaction prompt "nope"`) {
		t.Errorf("unknown named prompt: %v", err)
	}
	// The shipped prompt meets the spec users' files are checked against.
	if err := prompt.Check(curate.CompactPrompt(), curate.CompactPromptSpec); err != nil {
		t.Error(err)
	}
}

func TestLLMCompactMalformedAnswerFailsTheTurn(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "   "}})
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := fourTurns()
	xs, err := strategy(t, "extract-sc", curate.Options{Analyzer: an, Units: constraintUnits(c), Constraints: curate.Upstream{Version: "1"}}).
		Contexts(context.Background(), c, 1, curate.NewWorkspace(c, counter(t)))
	var te *curate.TurnError
	if !errors.As(err, &te) || te.Turn != 2 || len(xs) != 1 {
		t.Fatalf("got %d contexts, error %v; want turn 1 and a failed turn 2", len(xs), err)
	}
	if !strings.Contains(err.Error(), "empty") {
		t.Errorf("error %v does not say the answer was empty", err)
	}
	// The first try and DefaultRetries more.
	if n := srv.Count(); n != 1+analyze.DefaultRetries {
		t.Errorf("%d requests", n)
	}
}

func TestExtractSCOverLLMCompact(t *testing.T) {
	srv := compactServer(t)
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := fourTurns()
	opts := curate.Options{Analyzer: an, Units: constraintUnits(c), Constraints: curate.Upstream{Version: "1"}}
	ws := curate.NewWorkspace(c, counter(t))
	x, err := strategy(t, "extract-sc", opts).Contexts(context.Background(), c, 3, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := "system:Be brief.|assistant:4 lines, last [assistant]: a2\n\n[Session constraints: instructions the user gave earlier in this conversation that still apply to every reply]\n" +
		"1. Show drafts before sending anything. (process)\n[End of session constraints]|user:u3|"
	if got := rendered(c, x[0]); got != want {
		t.Errorf("turn 3:\n got %q\nwant %q", got, want)
	}
	// llm-compact in the same workspace reuses the summary.
	if _, err := strategy(t, "llm-compact", opts).Contexts(context.Background(), c, 3, ws); err != nil {
		t.Fatal(err)
	}
	if n := srv.Count(); n != 2 {
		t.Errorf("%d requests for turns 3 and 4, want 2", n)
	}
}

// TestLLMCompactPromptGolden pins the request our compaction prompt makes
// for the history before turn 3 (go test -run TestLLMCompactPromptGolden
// -update rewrites it after an intended change; bump the prompt's version).
func TestLLMCompactPromptGolden(t *testing.T) {
	an, err := analyze.New(nil, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := strategy(t, "llm-compact", curate.Options{Analyzer: an}).(*curate.LLMCompact)
	c := fourTurns()
	msgs, err := s.Request(c.Messages[:c.Turns()[2].User])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version: %s\n", s.Version())
	for _, m := range msgs {
		fmt.Fprintf(&b, "--- %s\n%s\n", m.Role, m.Content)
	}
	golden(t, "llm_compact_turn3", []byte(b.String()))
}
