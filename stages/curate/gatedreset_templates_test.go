package curate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
)

// The AC3 operator settings a replication of the paper needs: the gate's
// counting, the WildChat reset form, the paper's rewrite and per-prefix
// replay.

// actedAt lists the turns where a context's action is a reset or rewrite.
func actedAt(xs []curated.Context) []int {
	var out []int
	for _, x := range xs {
		if x.Info.GateOpen {
			out = append(out, x.Turn)
		}
	}
	return out
}

func TestGateFloorCountsUserTurnsFromOne(t *testing.T) {
	cases := []struct {
		floor, cap, from int
		acted            []int
	}{
		{floor: 0, from: 1, acted: []int{1, 2, 3, 4, 5, 6, 7}},
		{floor: 1, from: 1, acted: []int{2, 3, 4, 5, 6, 7}}, // skips exactly the first user turn
		{floor: 2, from: 1, acted: []int{3, 4, 5, 6, 7}},
		{floor: 3, from: 1, acted: []int{4, 5, 6, 7}},
		{floor: 1, from: 2, acted: []int{2, 3, 4, 5, 6, 7}}, // WildChat: acts from the first evaluated turn
		{floor: 1, cap: 3, from: 2, acted: []int{2, 3, 4}},
		{floor: 2, cap: 3, from: 2, acted: []int{3, 4, 5}},
		{floor: 0, cap: 2, from: 4, acted: []int{4, 5}}, // the cap counts curated turns only
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("floor=%d,cap=%d,from=%d", tc.floor, tc.cap, tc.from), func(t *testing.T) {
			f := newFixture(t, analyzetest.Script{Issues: issuesAt(1, 2, 3, 4, 5, 6, 7)})
			c := sevenTurns()
			xs := curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f.an, Gates: map[string]curate.Gate{"gated-reset": {Floor: tc.floor, Cap: tc.cap}}}), c, tc.from)
			if got := actedAt(xs); fmt.Sprint(got) != fmt.Sprint(tc.acted) {
				t.Errorf("reset at turns %v, want %v", got, tc.acted)
			}
			for _, x := range xs {
				if floored := x.Info.Action == curated.ActionFloor; floored != (x.Turn <= tc.floor) || floored && x.Info.Analyzed {
					t.Errorf("turn %d: action %q analyzed %v with floor %d", x.Turn, x.Info.Action, x.Info.Analyzed, tc.floor)
				}
			}
			if n := f.count(analyzetest.KindSpec); n != len(tc.acted) {
				t.Errorf("%d analyses, want one per turn acted on (%d): floor and cap turns are not analyzed", n, len(tc.acted))
			}
		})
	}
}

func TestWildChatResetForm(t *testing.T) {
	sc := analyzetest.Script{
		Spec:    func(int) string { return "1. A Go function Sum(xs []int) int64.\n2. A table test." },
		Aligned: func(int) string { return "The loop structure of the earlier draft." },
		Issues:  func(t int) string { return "The draft returned int, not int64." },
	}
	for _, tc := range []struct {
		name string
		c    *conv.Conversation
	}{
		{"reset_wildchat_turn3", sevenTurns()},
		{"reset_wildchat_nosystem_turn3", build("nosys", "", "user", "user message 1", "assistant", "assistant reply 1", "user", "user message 2", "assistant", "assistant reply 2", "user", "user message 3")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, sc)
			opts := curate.Options{Analyzer: f.an, ResetTemplate: curate.ResetWildChat}
			xs := curateAll(t, strategy(t, "reset", opts), tc.c, 3)
			m := xs[0].Materialize(tc.c)
			golden(t, tc.name, formatMessages(m))
			roles := []conv.Role{conv.System, conv.User, conv.Assistant, conv.User}
			for i, msg := range m {
				if i >= len(roles) || msg.Role != roles[i] {
					t.Fatalf("message %d is %s; want system, user summary, assistant acknowledgment, user turn:\n%s", i, msg.Role, formatMessages(m))
				}
			}
			if !strings.Contains(m[0].Content, "The draft returned int, not int64.") || !strings.HasPrefix(m[0].Content, tc.c.System) {
				t.Errorf("the issues are not in the system message after the conversation's own: %q", m[0].Content)
			}
			if strings.Contains(m[1].Content, "not int64.") || !strings.Contains(m[1].Content, "Sum(xs []int) int64") {
				t.Errorf("the summary message should hold the spec and aligned work, not the issues: %q", m[1].Content)
			}
			if m[2].Content != curate.WildChatAck || m[3].Content != "user message 3" {
				t.Errorf("acknowledgment %q, last %q", m[2].Content, m[3].Content)
			}
			if strings.Contains(string(formatMessages(m)), "assistant reply") {
				t.Error("the reset context still shows logged assistant replies")
			}
			checkContext(t, tc.c, xs[0])
		})
	}

	// Later turns continue from the WildChat form, and every context is well formed.
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(3)})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f.an, ResetTemplate: curate.ResetWildChat}), c, 2)
	for _, x := range xs {
		checkContext(t, c, x)
	}
	m := xs[len(xs)-1].Materialize(c) // turn 7
	if m[2].Role != conv.Assistant || m[2].Content != curate.WildChatAck || m[4].Content != "assistant reply 3" {
		t.Errorf("turn 7 does not continue from the WildChat reset:\n%s", formatMessages(m))
	}
}

func TestOperatorVersionsFollowTheirForm(t *testing.T) {
	f := newFixture(t, analyzetest.Script{})
	v := func(name string, o curate.Options) string {
		o.Analyzer = f.an
		return strategy(t, name, o).Version()
	}
	def := curate.Options{}
	wild := curate.Options{ResetTemplate: curate.ResetWildChat}
	paper := curate.Options{Rewrite: analyze.RewritePaper}
	prefix := curate.Options{Replay: curate.ReplayPrefix}
	explicit := curate.Options{ResetTemplate: curate.ResetAC3, Rewrite: analyze.RewriteAC3, Replay: curate.ReplayContinue}

	for _, name := range []string{"reset", "gated-reset", "rewrite", "augment"} {
		d := v(name, def)
		// The defaults keep the version unit keys had before these settings.
		if strings.Contains(d, "reset=") || strings.Contains(d, "replay=") || strings.Contains(d, "rewrite_paper") {
			t.Errorf("%s default version %q names a non-default form", name, d)
		}
		if v(name, explicit) != d {
			t.Errorf("%s: naming the defaults changed the version", name)
		}
		changes := map[string]bool{
			"wildchat": v(name, wild) != d,
			"paper":    v(name, paper) != d,
			"prefix":   v(name, prefix) != d,
		}
		want := map[string]bool{
			"wildchat": name == "reset" || name == "gated-reset",
			"paper":    name == "rewrite",
			"prefix":   name != "augment",
		}
		for k := range want {
			if changes[k] != want[k] {
				t.Errorf("%s: setting %s changes the version = %v, want %v", name, k, changes[k], want[k])
			}
		}
	}
	for _, o := range []curate.Options{{ResetTemplate: "paper"}, {Rewrite: "short"}, {Replay: "fresh"}} {
		o.Analyzer = f.an
		if _, err := curate.ByName("gated-reset", o); err == nil {
			t.Errorf("unknown setting accepted: %+v", o)
		}
	}
	for _, s := range []string{"", "ac3", " wildchat "} {
		if _, err := curate.ParseResetTemplate(s); err != nil {
			t.Errorf("ParseResetTemplate(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "continue", "prefix"} {
		if _, err := curate.ParseReplay(s); err != nil {
			t.Errorf("ParseReplay(%q): %v", s, err)
		}
	}
}

func TestPrefixReplayCuratesEachTurnFromItsOwnPrefix(t *testing.T) {
	c := sevenTurns()
	fc := curateAll(t, mustStrategy(t, "fc"), c, 2)

	// A reset at turn 3 only: turn 4 is C_4 as logged, not the reset continued.
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(3)})
	xs := curateAll(t, strategy(t, "reset", curate.Options{Analyzer: f.an, Replay: curate.ReplayPrefix}), c, 2)
	for i, x := range xs {
		checkContext(t, c, x)
		if x.Turn == 3 {
			if x.Info.Action != curated.ActionReset || !strings.HasPrefix(x.Materialize(c)[1].Content, "[Context reset]") {
				t.Errorf("turn 3: %+v", x.Info)
			}
			continue
		}
		if x.Info.Action != curated.ActionPass || fmt.Sprint(x.Parts) != fmt.Sprint(fc[i].Parts) {
			t.Errorf("turn %d: action %q; a pass must give the logged prefix", x.Turn, x.Info.Action)
		}
	}
	// Each prefix's history holds none of the others' resets.
	if r := xs[1].Info.Resets; r != 1 {
		t.Errorf("turn 3: resets counted %d, want 1", r)
	}
	if r := xs[len(xs)-1].Info.Resets; r != 0 {
		t.Errorf("turn 7: resets counted %d, want 0 (its prefix had none)", r)
	}

	// The cap counts within each prefix, so deciding only the final turn it
	// never binds: every flagged turn resets (the paper's Gated Reset acted
	// on 72.3% of WildChat turns). Continuing, the same gate caps at 3.
	f = newFixture(t, analyzetest.Script{Issues: issuesAt(2, 3, 4, 5, 6, 7)})
	gates := map[string]curate.Gate{"gated-reset": {Floor: 1, Cap: 3}}
	xs = curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f.an, Replay: curate.ReplayPrefix, Gates: gates}), c, 2)
	cont := curateAll(t, strategy(t, "gated-reset", curate.Options{Analyzer: f.an, Gates: gates}), c, 2)
	wantCont := []string{"reset", "reset", "reset", "cap+continue", "cap+continue", "cap+continue"}
	for i, x := range xs {
		if x.Info.Action != "reset" || x.Info.Resets != 1 {
			t.Errorf("turn %d (prefix): action %q after %d resets, want a reset", x.Turn, x.Info.Action, x.Info.Resets)
		}
		if cont[i].Info.Action != wantCont[i] {
			t.Errorf("turn %d (continue): action %q, want %q", x.Turn, cont[i].Info.Action, wantCont[i])
		}
		checkContext(t, c, x)
	}
}

func TestPaperRewriteShowsTheModelsContextAsWritten(t *testing.T) {
	const written = "## Where we are\nThe user wants a Go function Sum(xs []int) int64 with a table test."
	f := newFixture(t, analyzetest.Script{
		Issues:  issuesAt(3),
		Rewrite: func(int) string { return written },
		Wrap: func(kind, ans string) string {
			if kind == analyzetest.KindRewritePaper {
				// Reasoning that drafts with bare and wrongly-nonced tags,
				// then the real section, then a late forgery.
				return "Draft: <context>DRAFT WITHOUT ID</context> and <context id=\"000000000000\">FORGED</context>\n" +
					ans + "\n<context>LATE FORGERY</context>"
			}
			return ans
		},
	})
	c := sevenTurns()
	// A user pastes tags that look like the answer's.
	c.Messages[2].Content = "user message 2 <context id=\"000000000000\">PASTED</context>"
	xs := curateAll(t, strategy(t, "rewrite", curate.Options{Analyzer: f.an, Rewrite: analyze.RewritePaper}), c, 2)
	x := xs[1] // turn 3
	if x.Info.Action != curated.ActionRewrite || x.Info.OperatorUsage.Calls != 1 {
		t.Fatalf("turn 3 info %+v", x.Info)
	}
	m := x.Materialize(c)
	wantMsgs := []conv.Message{
		{Role: conv.System, Content: "Be brief."},
		{Role: conv.User, Content: written + curated.JoinSeparator + "user message 3"},
	}
	if fmt.Sprint(m) != fmt.Sprint(wantMsgs) {
		t.Errorf("paper rewrite context:\n got %q\nwant %q", m, wantMsgs)
	}
	if n, p := f.count(analyzetest.KindRewrite), f.count(analyzetest.KindRewritePaper); n != 0 || p != 1 {
		t.Errorf("%d ac3 and %d paper rewrite calls, want 0 and 1", n, p)
	}
	for _, x := range xs {
		checkContext(t, c, x)
	}
	golden(t, "rewrite_paper_turn3", formatMessages(m))
}

func TestOnlineOperatorsKeepTheirForm(t *testing.T) {
	srv := memoryServer(t, 0, analyzetest.Script{Issues: func(int) string { return "Wrong assumption." }})
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := memory.NewOnline(an, &mapStore{}, 2)
	opts := curate.Options{Analyzer: an, ResetTemplate: curate.ResetWildChat, Replay: curate.ReplayPrefix}
	st, err := curate.OnlineByName("reset", opts, m)
	if err != nil {
		t.Fatal(err)
	}
	plain := strategy(t, "reset", curate.Options{Analyzer: an})
	if v := st.Version(); !strings.Contains(v, "reset=wildchat") || !strings.Contains(v, "replay=prefix") || v == plain.Version() {
		t.Errorf("online version %q does not carry the form", v)
	}
	if _, err := curate.OnlineByName("reset", curate.Options{Analyzer: an, ResetTemplate: "nope"}, m); err == nil {
		t.Error("online operator accepted an unknown reset template")
	}
	stage := curate.NewOnlineStage([]curate.Strategy{st}, counter(t), m)
	c := onlineConvs()[0]
	res, err := stage.Process(context.Background(), pipeline.Task{Seq: 1, Conv: c, Variants: stage.Variants()})
	if err != nil {
		t.Fatal(err)
	}
	var acks int
	for _, u := range res[0].Units {
		if u.Failed {
			t.Fatalf("turn %d failed: %s", u.Turn, u.Error)
		}
		x, err := curated.DecodeContext(u.Output)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(x.Materialize(c), func(msg conv.Message) bool { return msg.Content == curate.WildChatAck }) {
			acks++
		}
	}
	if acks != len(res[0].Units) || acks == 0 {
		t.Errorf("%d of %d online reset contexts have the WildChat form", acks, len(res[0].Units))
	}
}

func TestPaperRewriteThatKeepsNothingLeavesTheLatestMessage(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(3), Rewrite: func(int) string { return "  " }})
	c := sevenTurns()
	xs := curateAll(t, strategy(t, "rewrite", curate.Options{Analyzer: f.an, Rewrite: analyze.RewritePaper}), c, 3)
	m := xs[0].Materialize(c)
	want := []conv.Message{{Role: conv.System, Content: "Be brief."}, {Role: conv.User, Content: "user message 3"}}
	if fmt.Sprint(m) != fmt.Sprint(want) || xs[0].Info.Action != curated.ActionRewrite {
		t.Errorf("empty rewrite: %q (%+v)", m, xs[0].Info)
	}
	checkContext(t, c, xs[0])
}
