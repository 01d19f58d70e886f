package compint_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/prompt/prompttest"
	"github.com/ac3/ac3/stages/compint"
)

func sc(t testing.TB, id int) compint.SC {
	t.Helper()
	s, ok := compint.Default().Get(id)
	if !ok {
		t.Fatalf("no SC %d", id)
	}
	return s
}

func TestOrders(t *testing.T) {
	both, err := compint.Orders(compint.BothOrders, 1, "cb-x", 3)
	if err != nil || !reflect.DeepEqual(both, []compint.Order{compint.CompliantFirst, compint.CompliantSecond}) {
		t.Fatalf("both = %v, %v", both, err)
	}
	counts := map[compint.Order]int{}
	for i := range 200 {
		base := "cb-" + strings.Repeat("x", i%17) + string(rune('a'+i%26))
		a, err := compint.Orders(compint.RandomOrder, 42, base, i)
		if err != nil || len(a) != 1 {
			t.Fatalf("random = %v, %v", a, err)
		}
		b, _ := compint.Orders(compint.RandomOrder, 42, base, i)
		if !reflect.DeepEqual(a, b) {
			t.Fatal("the same seed, context and SC drew different orders")
		}
		counts[a[0]]++
	}
	if counts[compint.CompliantFirst] < 60 || counts[compint.CompliantSecond] < 60 {
		t.Errorf("orders drawn %v: far from even", counts)
	}
	if _, err := compint.Orders("sometimes", 1, "cb-x", 1); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestProbePromptGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		id    int
		order compint.Order
	}{
		{"probe_sc2_compliant_first", 2, compint.CompliantFirst},
		{"probe_sc2_compliant_second", 2, compint.CompliantSecond},
		{"probe_sc14_compliant_first", 14, compint.CompliantFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := compint.NewMCQ(sc(t, tc.id), tc.order)
			if err != nil {
				t.Fatal(err)
			}
			text, err := q.Prompt()
			if err != nil {
				t.Fatal(err)
			}
			prompttest.Golden(t, "testdata/golden/"+tc.name+".txt", []conv.Message{{Role: conv.User, Content: text}})
		})
	}
	if v := compint.ProbePrompt().Version(); !strings.HasPrefix(v, "compint_probe@v1+") {
		t.Errorf("version %q", v)
	}
}

func TestProbeMessages(t *testing.T) {
	s := sc(t, 11)
	ctx := []conv.Message{
		{Role: conv.System, Content: "Summary of the session so far: the user asked about hiking."},
		{Role: conv.User, Content: "Earlier turns, joined.\n\n" + s.Probe + "\n"},
	}
	orig := append([]conv.Message(nil), ctx...)
	for _, g := range compint.Groups() {
		t.Run(string(g), func(t *testing.T) {
			msgs, q, err := compint.ProbeMessages(ctx, s, g, compint.Hard, compint.CompliantSecond)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ctx, orig) {
				t.Fatal("ProbeMessages changed its input")
			}
			if len(msgs) != 2 || msgs[0] != ctx[0] {
				t.Fatalf("messages %+v", msgs)
			}
			mcq, _ := q.Prompt()
			want := "Earlier turns, joined.\n\n"
			if g == compint.UpperBound {
				want += s.Framing(compint.Hard) + "\n\n"
			}
			want += mcq
			if msgs[1].Content != want {
				t.Errorf("last message\n%q\nwant\n%q", msgs[1].Content, want)
			}
			if q.Compliant != "B" || q.B != s.Correct || q.A != s.Incorrect {
				t.Errorf("MCQ %+v", q)
			}
		})
	}
	bad := []struct {
		name string
		ctx  []conv.Message
		g    compint.Group
		f    compint.Framing
	}{
		{"empty", nil, compint.Compacted, ""},
		{"ends with the assistant", []conv.Message{{Role: conv.User, Content: s.Probe}, {Role: conv.Assistant, Content: "ok"}}, compint.Compacted, ""},
		{"no probe", []conv.Message{{Role: conv.User, Content: "something else"}}, compint.Compacted, ""},
		{"unknown group", ctx, "middle", ""},
		{"ub without a framing", ctx, compint.UpperBound, ""},
	}
	for _, tc := range bad {
		if _, _, err := compint.ProbeMessages(tc.ctx, s, tc.g, tc.f, compint.CompliantFirst); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, _, err := compint.ProbeMessages(ctx, s, compint.Compacted, "", "sideways"); err == nil {
		t.Error("unknown order accepted")
	}
}

func TestRetentionContext(t *testing.T) {
	s := sc(t, 15)
	tests := []struct {
		name string
		in   []conv.Message
		want []conv.Message
	}{
		{"probe turn dropped", []conv.Message{{Role: conv.User, Content: "hi"}, {Role: conv.Assistant, Content: "hello"}, {Role: conv.User, Content: s.Probe}},
			[]conv.Message{{Role: conv.User, Content: "hi"}, {Role: conv.Assistant, Content: "hello"}}},
		{"joined user turns keep the rest", []conv.Message{{Role: conv.User, Content: "hi\n\n" + s.Probe}},
			[]conv.Message{{Role: conv.User, Content: "hi"}}},
	}
	for _, tc := range tests {
		got, err := compint.RetentionContext(tc.in, s.Probe)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v", tc.name, got, err)
		}
	}
	if _, err := compint.RetentionContext([]conv.Message{{Role: conv.User, Content: "no probe here"}}, s.Probe); err == nil {
		t.Error("a context without the probe was accepted")
	}
}

func TestMCQParse(t *testing.T) {
	s := sc(t, 15) // A bulleted list of key points. / A two-paragraph prose answer.
	q, err := compint.NewMCQ(s, compint.CompliantFirst)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in     string
		letter string // "" means rejected
	}{
		{"A", "A"},
		{"B", "B"},
		{" b \n", "B"},
		{"A.", "A"},
		{"(B)", "B"},
		{"B)", "B"},
		{"**A**", "A"},
		{"`B`", "B"},
		{`"A"`, "A"},
		{"Answer: B", "B"},
		{"answer - a", "A"},
		{"<think>The user wants bullets, so A… or B?</think>\nA", "A"},
		{"A) A bulleted list of key points.", "A"},
		{"B: a two-paragraph prose answer", "B"},
		{"B) A bulleted list of key points.", ""}, // letter and text disagree
		{"A bulleted list of key points.", ""},    // the option's text without its letter
		{"A or B", ""},
		{"AB", ""},
		{"Both A and B are fine.", ""},
		{"C", ""},
		{"", ""},
		{"I would choose A because the user asked for bullets.", ""},
		{"<think>A</think>", ""},
	}
	for _, tc := range tests {
		got, err := q.Parse(tc.in)
		if tc.letter == "" {
			if err == nil || !errors.Is(err, compint.ErrNotAChoice) {
				t.Errorf("Parse(%q) = %+v, %v; want ErrNotAChoice", tc.in, got, err)
			}
			continue
		}
		if err != nil || got.Letter != tc.letter || got.Compliant != (tc.letter == "A") {
			t.Errorf("Parse(%q) = %+v, %v; want %s", tc.in, got, err, tc.letter)
		}
	}
}

func FuzzMCQParse(f *testing.F) {
	for _, s := range []string{"A", "B.", "(a)", "**B**", "Answer: A", "A) Run the delete command directly.", "A or B", "<think>x</think>B", "'\"*A*\"'", "\xff"} {
		f.Add(s)
	}
	q, err := compint.NewMCQ(compint.SC{ID: 1, Probe: "p", Correct: "Run the delete command directly.", Incorrect: "Ask first."}, compint.CompliantSecond)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := q.Parse(s)
		if err != nil {
			if !errors.Is(err, compint.ErrNotAChoice) {
				t.Fatalf("error %v is not ErrNotAChoice", err)
			}
			return
		}
		if c.Letter != "A" && c.Letter != "B" {
			t.Fatalf("letter %q", c.Letter)
		}
		if c.Compliant != (c.Letter == "B") {
			t.Fatalf("compliant %v for %s", c.Compliant, c.Letter)
		}
		// An accepted answer names one letter only: the other letter alone
		// is never a word of it outside the echoed option.
		if strings.Contains(strings.ToUpper(s), "A OR B") {
			t.Fatalf("accepted the hedge %q", s)
		}
	})
}
