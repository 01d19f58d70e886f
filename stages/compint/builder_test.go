package compint_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/compint"
)

// stitchAll feeds cs to a fresh Stitcher and returns the contexts it made.
func stitchAll(t *testing.T, opt compint.StitchOptions, cs []*conv.Conversation) ([]*compint.Base, compint.StitchStats) {
	t.Helper()
	st, err := compint.NewStitcher(mustCounter(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []*compint.Base
	for _, c := range cs {
		if b := st.Add(c); b != nil {
			out = append(out, b)
		}
	}
	return out, st.Stats()
}

// checkBase checks a context against its sources: budget, whole turns in
// source order, the recorded token count.
func checkBase(t *testing.T, b *compint.Base, opt compint.StitchOptions, byID map[string]*conv.Conversation) {
	t.Helper()
	tok := mustCounter(t)
	max := opt.MaxTokens
	if max == 0 {
		max = opt.TargetTokens + opt.TargetTokens/4
	}
	msgs := b.Messages
	if b.System != "" {
		msgs = append([]conv.Message{{Role: conv.System, Content: b.System}}, msgs...)
	}
	if got := tok.CountMessages(msgs); got != b.Tokens {
		t.Errorf("%s: Tokens = %d, recounted %d", b.ID, b.Tokens, got)
	}
	if b.Tokens < opt.TargetTokens || b.Tokens > max {
		t.Errorf("%s: %d tokens, outside [%d, %d]", b.ID, b.Tokens, opt.TargetTokens, max)
	}
	// Rebuild the messages from the sources: each contributes exactly its
	// first Turns complete turns, in order.
	var want []conv.Message
	for _, s := range b.Sources {
		c := byID[s.ID]
		turns := c.Turns()
		if s.Turns < 1 || s.Turns > s.Of || s.Of > len(turns) {
			t.Fatalf("%s: source %+v of a conversation with %d turns", b.ID, s, len(turns))
		}
		for _, tr := range turns[:s.Turns] {
			if tr.Reply < 0 {
				t.Errorf("%s: took an unanswered turn of %s", b.ID, s.ID)
			}
			want = append(want, c.Messages[tr.User:tr.End]...)
		}
	}
	if !reflect.DeepEqual(want, b.Messages) {
		t.Errorf("%s: messages are not the sources' whole turns in order", b.ID)
	}
	if len(b.Messages) == 0 || b.Messages[0].Role != conv.User {
		t.Errorf("%s: does not start with a user message", b.ID)
	}
	for i := 1; i < len(b.Messages); i++ {
		if b.Messages[i].Role == b.Messages[i-1].Role {
			t.Errorf("%s: two %s messages in a row at %d", b.ID, b.Messages[i].Role, i)
		}
	}
}

func TestStitcherBudgetAndBoundaries(t *testing.T) {
	tests := []struct {
		name  string
		opt   compint.StitchOptions
		convs []*conv.Conversation
		bases int
		check func(t *testing.T, bs []*compint.Base, st compint.StitchStats)
	}{
		{
			name: "whole conversations until the target",
			// 683 tokens a conversation: three reach the target within the cap
			opt: compint.StitchOptions{TargetTokens: 2000},
			convs: []*conv.Conversation{
				synthConv("a", 4, 40), synthConv("b", 4, 40), synthConv("c", 4, 40), synthConv("d", 4, 40),
				synthConv("e", 4, 40), synthConv("f", 4, 40), synthConv("g", 4, 40), synthConv("h", 4, 40),
			},
			bases: 2,
			check: func(t *testing.T, bs []*compint.Base, st compint.StitchStats) {
				for _, b := range bs {
					for _, s := range b.Sources {
						if s.Turns != s.Of {
							t.Errorf("%s cropped (%d of %d) though it fit", s.ID, s.Turns, s.Of)
						}
					}
				}
				if st.Cropped != 0 || st.Contexts != 2 {
					t.Errorf("stats %+v", st)
				}
			},
		},
		{
			name: "a conversation past the cap is cropped at a turn boundary",
			opt:  compint.StitchOptions{TargetTokens: 1000, MaxTokens: 1100},
			convs: []*conv.Conversation{
				synthConv("a", 3, 40), synthConv("long", 40, 40), synthConv("c", 3, 40),
			},
			bases: 1,
			check: func(t *testing.T, bs []*compint.Base, st compint.StitchStats) {
				src := bs[0].Sources
				if len(src) != 2 || src[1].ID != "long" || src[1].Turns >= src[1].Of {
					t.Errorf("sources %+v: want a cropped second source", src)
				}
				if st.Cropped != 1 {
					t.Errorf("stats %+v", st)
				}
			},
		},
		{
			name: "a first turn longer than the cap is skipped",
			opt:  compint.StitchOptions{TargetTokens: 300, MaxTokens: 400},
			convs: []*conv.Conversation{
				synthConv("huge", 2, 400), synthConv("b", 4, 20), synthConv("c", 4, 20), synthConv("d", 4, 20),
			},
			bases: 3,
			check: func(t *testing.T, bs []*compint.Base, st compint.StitchStats) {
				if bs[0].Sources[0].ID != "b" || st.Skipped != 1 {
					t.Errorf("sources %+v, stats %+v", bs[0].Sources, st)
				}
			},
		},
		{
			name: "an unanswered turn ends a source; leading assistant messages are dropped",
			opt:  compint.StitchOptions{TargetTokens: 400},
			convs: func() []*conv.Conversation {
				a := synthConv("a", 3, 20)
				a.Messages = append([]conv.Message{{Role: conv.Assistant, Content: "Hello! How can I help?"}}, a.Messages...)
				// a second user message in a row after turn 2
				a.Messages = slices.Insert(a.Messages, 5, conv.Message{Role: conv.User, Content: "hello?"})
				return []*conv.Conversation{a, synthConv("b", 6, 20), synthConv("c", 6, 20)}
			}(),
			bases: 2,
			check: func(t *testing.T, bs []*compint.Base, st compint.StitchStats) {
				if s := bs[0].Sources[0]; s.ID != "a" || s.Turns != 2 || s.Of != 2 {
					t.Errorf("first source %+v, want a with 2 of 2 complete turns", s)
				}
			},
		},
		{
			name: "only the first source's system message is kept",
			opt:  compint.StitchOptions{TargetTokens: 500},
			convs: func() []*conv.Conversation {
				a, b := synthConv("a", 2, 30), synthConv("b", 8, 30)
				a.System, b.System = "You are a helpful assistant.", "You are a pirate."
				return []*conv.Conversation{a, b}
			}(),
			bases: 1,
			check: func(t *testing.T, bs []*compint.Base, st compint.StitchStats) {
				if bs[0].System != "You are a helpful assistant." {
					t.Errorf("system %q", bs[0].System)
				}
			},
		},
		{
			name:  "the last partial context is leftover, not emitted",
			opt:   compint.StitchOptions{TargetTokens: 100000},
			convs: []*conv.Conversation{synthConv("a", 3, 20), synthConv("b", 3, 20)},
			bases: 0,
			check: func(t *testing.T, bs []*compint.Base, st compint.StitchStats) {
				if st.LeftoverConversations != 2 || st.LeftoverTokens == 0 || st.Contexts != 0 {
					t.Errorf("stats %+v", st)
				}
			},
		},
		{
			name:  "MaxContexts stops the stitcher",
			opt:   compint.StitchOptions{TargetTokens: 400, MaxContexts: 2},
			convs: synthCorpus(6, 3, 20), // two conversations a context
			bases: 2,
			check: func(t *testing.T, bs []*compint.Base, st compint.StitchStats) {
				if st.Conversations != 4 {
					t.Errorf("stitcher took %d conversations after it was done", st.Conversations)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, st := stitchAll(t, tc.opt, tc.convs)
			if len(bs) != tc.bases {
				t.Fatalf("%d contexts, want %d (stats %+v)", len(bs), tc.bases, st)
			}
			byID := map[string]*conv.Conversation{}
			for _, c := range tc.convs {
				byID[c.ID] = c
			}
			for _, b := range bs {
				checkBase(t, b, tc.opt, byID)
			}
			tc.check(t, bs, st)
		})
	}
}

func TestStitcherOptions(t *testing.T) {
	for _, opt := range []compint.StitchOptions{
		{TargetTokens: 0},
		{TargetTokens: 100, MaxTokens: 50},
		{TargetTokens: 100, MaxContexts: -1},
	} {
		if _, err := compint.NewStitcher(mustCounter(t), opt); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
	st, err := compint.NewStitcher(mustCounter(t), compint.StitchOptions{TargetTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if st.Options().MaxTokens != 1250 {
		t.Errorf("default cap %d, want 1250", st.Options().MaxTokens)
	}
}

// build stitches cs and expands every context, returning all instances.
func build(t *testing.T, sopt compint.StitchOptions, opt compint.Options, set *compint.Set, cs []*conv.Conversation) []*compint.Instance {
	t.Helper()
	st, err := compint.NewStitcher(mustCounter(t), sopt)
	if err != nil {
		t.Fatal(err)
	}
	bd, err := compint.NewBuilder(mustCounter(t), set, opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []*compint.Instance
	stats, err := compint.Build(context.Background(), seq(cs), st, bd, func(in *compint.Instance) error {
		out = append(out, in)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != stats.Contexts*bd.PerContext() {
		t.Errorf("%d instances from %d contexts, want %d each", len(out), stats.Contexts, bd.PerContext())
	}
	return out
}

func synthCorpus(n, turns, words int) []*conv.Conversation {
	var cs []*conv.Conversation
	for i := range n {
		cs = append(cs, synthConv(fmt.Sprintf("c%02d", i), turns, words))
	}
	return cs
}

func allAxes() compint.Options {
	return compint.Options{Locations: compint.Locations(), Framings: compint.Framings(), Repeat: 4, Seed: 7}
}

func TestInstancesInjection(t *testing.T) {
	set := compint.Default()
	sopt := compint.StitchOptions{TargetTokens: 2000}
	cs := synthCorpus(7, 5, 30)
	ins := build(t, sopt, allAxes(), set, cs)
	if len(ins) == 0 {
		t.Fatal("no instances")
	}
	tok := mustCounter(t)
	baselines := map[string]*compint.Instance{}
	seen := map[string]bool{}
	for _, in := range ins {
		c, m := in.Conv, in.Meta
		if seen[c.ID] {
			t.Fatalf("id %s used twice", c.ID)
		}
		seen[c.ID] = true
		got, ok, err := compint.ReadMeta(c)
		if err != nil || !ok || !reflect.DeepEqual(got, m) {
			t.Fatalf("ReadMeta = %+v, %v, %v; want %+v", got, ok, err, m)
		}
		sc, _ := set.Get(m.SCID)
		n := m.ProbeTurn - 1
		turns := c.Turns()
		if len(turns) != n+1 || c.UserTurns() != n+1 {
			t.Fatalf("%s: %d turns, probe turn %d", c.ID, len(turns), m.ProbeTurn)
		}
		last := c.Messages[len(c.Messages)-1]
		if last.Role != conv.User || last.Content != sc.Probe || m.Probe != sc.Probe {
			t.Errorf("%s: last message %+v is not the probe", c.ID, last)
		}
		if c.Format != compint.Format || m.TargetTokens != sopt.TargetTokens {
			t.Errorf("%s: format %q, target %d", c.ID, c.Format, m.TargetTokens)
		}
		// The history's token count, with the SC injected (recounted for
		// two SCs only: tokenizing is the slow part of this test).
		hist := c.Messages[:len(c.Messages)-1]
		if m.SCID <= 2 {
			if got := tok.CountMessages(hist); got != m.Tokens {
				t.Errorf("%s: Tokens = %d, recounted %d", c.ID, m.Tokens, got)
			}
		}
		if m.Kind == compint.WithoutSC {
			baselines[c.ID] = in
			if m.Location != compint.None || len(m.InjectedTurns) != 0 || m.Tokens != m.BaseTokens {
				t.Errorf("baseline %s: %+v", c.ID, m)
			}
			for _, msg := range hist {
				if strings.Contains(msg.Content, sc.Text[1:]) {
					t.Errorf("baseline %s carries the SC", c.ID)
				}
			}
			continue
		}
		base := baselines[m.BaselineID]
		if base == nil {
			t.Fatalf("%s: baseline %s not emitted before it", c.ID, m.BaselineID)
		}
		if m.Tokens <= m.BaseTokens {
			t.Errorf("%s: injecting did not add tokens", c.ID)
		}
		// Which turns: the rule of each location.
		var want []int
		switch m.Location {
		case compint.Top:
			want = []int{1}
		case compint.Middle:
			want = []int{n/2 + 1}
		case compint.Bottom:
			want = []int{n}
		case compint.Multi:
			if len(m.InjectedTurns) != min(4, n) || m.Repeat != 4 || m.Seed != 7 {
				t.Errorf("%s: multi %+v", c.ID, m)
			}
			if !slices.IsSorted(m.InjectedTurns) || len(slices.Compact(slices.Clone(m.InjectedTurns))) != len(m.InjectedTurns) {
				t.Errorf("%s: turns %v not distinct and sorted", c.ID, m.InjectedTurns)
			}
			want = m.InjectedTurns
		}
		if !reflect.DeepEqual(m.InjectedTurns, want) {
			t.Errorf("%s %s: injected %v, want %v", c.ID, m.Location, m.InjectedTurns, want)
		}
		if m.Injected != sc.Framing(m.Framing) {
			t.Errorf("%s: injected %q under %s", c.ID, m.Injected, m.Framing)
		}
		// Every message equals the baseline's except the chosen user turns,
		// which are the framed SC, a newline, then the original text.
		for i, tr := range turns[:n] {
			for j := tr.User; j < tr.End; j++ {
				got, orig := c.Messages[j], base.Conv.Messages[j]
				if j == tr.User && slices.Contains(want, i+1) {
					if got.Content != m.Injected+"\n"+orig.Content {
						t.Errorf("%s turn %d: %q", c.ID, i+1, got.Content)
					}
				} else if got != orig {
					t.Errorf("%s: message %d changed", c.ID, j)
				}
			}
		}
	}
}

func TestInstancesDeterministic(t *testing.T) {
	set := compint.Default()
	sopt := compint.StitchOptions{TargetTokens: 1500}
	cs := synthCorpus(10, 6, 20)
	a := build(t, sopt, allAxes(), set, cs)
	b := build(t, sopt, allAxes(), set, cs)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same input and seed gave different instances")
	}
	other := allAxes()
	other.Seed = 8
	c := build(t, sopt, other, set, cs)
	moved := 0
	for i := range a {
		if a[i].Meta.Location == compint.Multi {
			if a[i].Conv.ID == c[i].Conv.ID {
				t.Errorf("multi instance kept its id under another seed")
			}
			if !reflect.DeepEqual(a[i].Meta.InjectedTurns, c[i].Meta.InjectedTurns) {
				moved++
			}
		} else if a[i].Conv.ID != c[i].Conv.ID {
			t.Errorf("%s instance changed id with the seed", a[i].Meta.Location)
		}
	}
	if moved == 0 {
		t.Error("changing the seed moved no multi injection")
	}
	// The multi draw is shared by the framings of one context and SC.
	draws := map[string][]int{}
	for _, in := range a {
		if in.Meta.Location != compint.Multi {
			continue
		}
		k := fmt.Sprint(in.Meta.BaseID, in.Meta.SCID)
		if d, ok := draws[k]; ok && !reflect.DeepEqual(d, in.Meta.InjectedTurns) {
			t.Errorf("framings of %s drew different turns", k)
		}
		draws[k] = in.Meta.InjectedTurns
	}
}

// With fewer user turns than r, multi restates the SC in every turn.
func TestMultiRepeatCapped(t *testing.T) {
	set, err := compint.Parse("one", []byte(`[`+goodSC+`}]`))
	if err != nil {
		t.Fatal(err)
	}
	ins := build(t, compint.StitchOptions{TargetTokens: 300, MaxTokens: 2000},
		compint.Options{Locations: []compint.Location{compint.Multi}, Repeat: 50, Seed: 1},
		set, []*conv.Conversation{synthConv("a", 3, 40), synthConv("b", 3, 40)})
	for _, in := range ins {
		if in.Meta.Kind != compint.WithSC {
			continue
		}
		n := in.Meta.ProbeTurn - 1
		if want := []int{1, 2, 3, 4, 5, 6}[:n]; !reflect.DeepEqual(in.Meta.InjectedTurns, want) {
			t.Errorf("turns %v, want all %d", in.Meta.InjectedTurns, n)
		}
	}
}

func TestBuilderOptions(t *testing.T) {
	set := compint.Default()
	bad := []compint.Options{
		{Locations: []compint.Location{"side"}},
		{Framings: []compint.Framing{"soft"}},
		{Locations: []compint.Location{compint.Multi}, Repeat: 1},
		{Locations: []compint.Location{compint.Top, compint.Top}},
		{Framings: []compint.Framing{compint.Hard, compint.Hard}},
	}
	for _, o := range bad {
		if _, err := compint.NewBuilder(mustCounter(t), set, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	bd, err := compint.NewBuilder(mustCounter(t), set, compint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := bd.Options()
	if !reflect.DeepEqual(o.Locations, []compint.Location{compint.Top}) || !reflect.DeepEqual(o.Framings, []compint.Framing{compint.Explicit}) {
		t.Errorf("defaults %+v, want the paper's top/explicit", o)
	}
	if bd.PerContext() != 30 {
		t.Errorf("PerContext = %d, want 15 baselines + 15 instances", bd.PerContext())
	}
	if _, err := compint.NewBuilder(mustCounter(t), nil, o); err == nil {
		t.Error("nil set accepted")
	}
}

func TestBuildStops(t *testing.T) {
	set := compint.Default()
	cs := synthCorpus(10, 4, 30)
	st, _ := compint.NewStitcher(mustCounter(t), compint.StitchOptions{TargetTokens: 500})
	bd, _ := compint.NewBuilder(mustCounter(t), set, compint.Options{})
	boom := errors.New("disk full")
	n := 0
	_, err := compint.Build(context.Background(), seq(cs), st, bd, func(*compint.Instance) error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 3 {
		t.Errorf("err %v after %d instances", err, n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, _ = compint.NewStitcher(mustCounter(t), compint.StitchOptions{TargetTokens: 500})
	if _, err := compint.Build(ctx, seq(cs), st, bd, func(*compint.Instance) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled build returned %v", err)
	}

	readErr := errors.New("line 3: bad record")
	broken := func(yield func(*conv.Conversation, error) bool) {
		if yield(cs[0], nil) {
			yield(nil, readErr)
		}
	}
	st, _ = compint.NewStitcher(mustCounter(t), compint.StitchOptions{TargetTokens: 500})
	if _, err := compint.Build(context.Background(), broken, st, bd, func(*compint.Instance) error { return nil }); !errors.Is(err, readErr) {
		t.Errorf("reader error came back as %v", err)
	}
}

// The real WildChat sample: contexts of a few thousand tokens keep every
// invariant, and the instance carries the sources' metadata.
func TestWildChatFixture(t *testing.T) {
	cs := wildchat(t)
	byID := map[string]*conv.Conversation{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	sopt := compint.StitchOptions{TargetTokens: 3000}
	bs, st := stitchAll(t, sopt, cs)
	if len(bs) == 0 {
		t.Fatalf("no context from the sample: %+v", st)
	}
	for _, b := range bs {
		checkBase(t, b, sopt, byID)
	}
	if st.Conversations != len(cs) || st.Used+st.Skipped+st.LeftoverConversations != len(cs) {
		t.Errorf("stats do not add up: %+v", st)
	}
	ins := build(t, sopt, allAxes(), compint.Default(), cs)
	if want := len(bs) * 15 * (1 + 16); len(ins) != want {
		t.Errorf("%d instances, want %d", len(ins), want)
	}
	for _, in := range ins {
		if in.Meta.Sources[0].Source.File != "wildchat-1m-sample10.jsonl" || in.Conv.Source != in.Meta.Sources[0].Source {
			t.Fatalf("source %+v", in.Conv.Source)
		}
	}
}
