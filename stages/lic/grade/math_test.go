package grade_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/stages/lic/grade"
)

func TestMathOnSampleReferences(t *testing.T) {
	g := grade.New(grade.Options{})
	for _, in := range sample(t, grade.TaskMath) {
		ref, ok := grade.GSM8KAnswer(in.Answer)
		if !ok {
			t.Fatalf("%s: no reference number", in.TaskID)
		}
		n := int64(ref.Value)
		right := []string{
			in.Answer, // the GSM8K solution itself, "#### n" last
			"Step by step...\n" + grade.AnswerPrefix + " " + ref.Text,
			fmt.Sprintf("So the total is 7 + 9.\n\n**Final answer: %d**", n),
			fmt.Sprintf("Final Answer:\n\n$%d.00", n),
			fmt.Sprintf("The answer is \\boxed{%d}.", n),
			fmt.Sprintf("After 3 steps we get %d", n), // last number
		}
		wrong := []string{
			fmt.Sprintf("%s %d", grade.AnswerPrefix, n+1),
			fmt.Sprintf("%s %d\nCheck: %d + 0 = %d", grade.AnswerPrefix, n+1, n, n),
			"I need more information to answer.",
		}
		for _, a := range right {
			res, err := g.Grade(context.Background(), in, a)
			if err != nil || res.Status != grade.Pass {
				t.Errorf("%s: %q graded %s (%s), err %v; want pass", in.TaskID, a, res.Status, res.Reason, err)
			}
		}
		for _, a := range wrong {
			res, err := g.Grade(context.Background(), in, a)
			if err != nil || res.Status != grade.Fail {
				t.Errorf("%s: %q graded %s (%s), err %v; want fail", in.TaskID, a, res.Status, res.Reason, err)
			}
		}
	}
}

func TestExtractNumber(t *testing.T) {
	tests := []struct {
		name, in string
		want     float64
		how      string
	}{
		{"prefix", "work...\nFinal answer: 42", 42, grade.ExtractedPrefix},
		{"prefix wins over later numbers", "Final answer: 42\n(we checked 40 + 2 = 42 and 7)", 42, grade.ExtractedPrefix},
		{"last prefix wins", "Final answer: 3\nWait, I made an error.\nFinal answer: 5", 5, grade.ExtractedPrefix},
		{"bold prefix", "**Final answer:** 1,234", 1234, grade.ExtractedPrefix},
		{"prefix with is", "The final answer is $18.50.", 18.5, grade.ExtractedPrefix},
		{"prefix alone on its line", "Final answer:\n\n  **-7**", -7, grade.ExtractedPrefix},
		{"prefix then words then no number falls back", "Final answer: see above. Total 12 apples", 12, grade.ExtractedPrefix},
		{"prose mention is not the prefix", "Before the final answer, note 3 things.\nTotal: 8", 8, grade.ExtractedLastNum},
		{"hashes", "so 3 + 4\n#### 7", 7, grade.ExtractedHashes},
		{"boxed", `thus $\boxed{\frac{3}{4}}$ of it`, 0.75, grade.ExtractedBoxed},
		{"boxed with text", `\boxed{120 \text{ minutes}} after 3 tries`, 120, grade.ExtractedBoxed},
		{"last number", "He has 3 apples and buys 5 more, so 8 in all.", 8, grade.ExtractedLastNum},
		{"currency and thousands", "Final answer: $1,250,000", 1250000, grade.ExtractedPrefix},
		{"euro after sign", "Final answer: -€5", -5, grade.ExtractedPrefix},
		{"percent", "Final answer: 45%", 45, grade.ExtractedPrefix},
		{"fraction", "Final answer: 7/2 cups", 3.5, grade.ExtractedPrefix},
		{"decimal without leading zero", "Final answer: .25", 0.25, grade.ExtractedPrefix},
		{"trailing units", "Final answer: 15 dollars per hour", 15, grade.ExtractedPrefix},
		{"hyphenated age is not negative", "a 5-year-old tree gives 2022-2023 fruit", 2023, grade.ExtractedLastNum},
		{"digits glued to letters are not numbers", "the H2O costs 4", 4, grade.ExtractedLastNum},
		{"unicode minus", "Final answer: −12", -12, grade.ExtractedPrefix},
		{"comma not a thousands separator", "values 3,4", 4, grade.ExtractedLastNum},
		{"think block removed by Grade, not here", "Final answer: 9", 9, grade.ExtractedPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, how, ok := grade.ExtractNumber(tt.in)
			if !ok {
				t.Fatalf("no number found in %q", tt.in)
			}
			if !grade.SameNumber(n.Value, tt.want) || how != tt.how {
				t.Errorf("ExtractNumber(%q) = %v (%q) by %q; want %v by %q", tt.in, n.Value, n.Text, how, tt.want, tt.how)
			}
		})
	}
	if _, _, ok := grade.ExtractNumber("no digits here"); ok {
		t.Error("found a number in text without digits")
	}
}

func TestMathThinkBlockIgnored(t *testing.T) {
	in := &grade.Instance{TaskID: "m", Task: grade.TaskMath, Answer: "#### 10"}
	res, err := grade.New(grade.Options{}).Grade(context.Background(), in, "<think>maybe 11? Final answer: 11</think>\nFinal answer: 10")
	if err != nil || res.Status != grade.Pass {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestMathBadReference(t *testing.T) {
	in := &grade.Instance{TaskID: "m", Task: grade.TaskMath, Answer: "no marker"}
	_, err := grade.New(grade.Options{}).Grade(context.Background(), in, "Final answer: 3")
	if !errors.Is(err, grade.ErrBadInstance) {
		t.Fatalf("err = %v; want ErrBadInstance", err)
	}
}

func TestSameNumber(t *testing.T) {
	tests := []struct {
		a, b float64
		want bool
	}{
		{34, 34.0, true},
		{3360, 3360.000001, true},
		{0.1 + 0.2, 0.3, true},
		{5, 6, false},
		{1e9, 1e9 + 10, false},
		{0, 1e-7, true},
		{0, 1e-3, false},
	}
	for _, tt := range tests {
		if got := grade.SameNumber(tt.a, tt.b); got != tt.want {
			t.Errorf("SameNumber(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}

// adversarialReplies are long replies that once made ExtractNumber take
// quadratic time (a fuzzing run stalled on them): a prefix repeated on one
// line re-scanned the rest of the line per prefix; a huge "1,234,234,…"
// re-copied its digits per group and was re-read from every comma.
func adversarialReplies(n int) map[string]struct {
	reply string
	want  string // "" when no number should be found
} {
	return map[string]struct {
		reply string
		want  string
	}{
		"prefix repeated on a line":  {strings.Repeat("final answer: x ", n) + "\nFinal answer: 12", "12"},
		"prefix then number at end":  {strings.Repeat("Final answer: ", n) + "7", "7"},
		"huge thousands run":         {"1" + strings.Repeat(",234", n), ""},
		"huge thousands then answer": {"1" + strings.Repeat(",234", n) + " so 5", "5"},
		"long digit run":             {strings.Repeat("9", 4*n), ""},
		"many unclosed boxes":        {strings.Repeat(`\boxed{`, n) + "3", "3"},
		"spaces before a word":       {"5" + strings.Repeat(" ", 4*n) + "x", "5"},
	}
}

func TestExtractNumberAdversarial(t *testing.T) {
	for name, tc := range adversarialReplies(20000) {
		got, _, ok := grade.ExtractNumber(tc.reply)
		if (tc.want == "") != !ok || ok && got.Text != tc.want {
			t.Errorf("%s: got %q (found %v), want %q", name, got.Text, ok, tc.want)
		}
	}
}

// BenchmarkExtractNumberAdversarial reads each adversarial reply at 80 kB;
// time per op grows linearly with the size (try n*10 by hand to compare).
func BenchmarkExtractNumberAdversarial(b *testing.B) {
	for name, tc := range adversarialReplies(20000) {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(tc.reply)))
			for b.Loop() {
				grade.ExtractNumber(tc.reply)
			}
		})
	}
}

func FuzzExtractNumber(f *testing.F) {
	for _, s := range []string{"Final answer: $1,234.50", "#### 7", `\boxed{\frac{1}{2}}`, "-5-year 3/0 .5e3%", "1,2,3,,4", "final answer is", "\\boxed{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, how, ok := grade.ExtractNumber(s)
		if ok && how == "" {
			t.Fatalf("a number without a rule: %+v", n)
		}
		if ok && n.Text == "" {
			t.Fatalf("a number without text in %q", s)
		}
	})
}

// FuzzParseNumberRoundTrip writes an integer the ways answers do and
// checks it reads back as itself.
func FuzzParseNumberRoundTrip(f *testing.F) {
	f.Add(int64(1234567), uint8(0))
	f.Add(int64(-42), uint8(3))
	f.Fuzz(func(t *testing.T, n int64, style uint8) {
		if n > 1e15 || n < -1e15 {
			return
		}
		s := strconv.FormatInt(n, 10)
		switch style % 5 {
		case 1:
			s = withThousands(n)
		case 2:
			if n < 0 {
				s = "-$" + withThousands(-n)
			} else {
				s = "$" + withThousands(n)
			}
		case 3:
			s += ".00 units"
		case 4:
			s = grade.AnswerPrefix + " **" + s + "**"
		}
		got, ok := grade.ParseNumber(s)
		if !ok || !grade.SameNumber(got.Value, float64(n)) {
			t.Fatalf("ParseNumber(%q) = %v, %v; want %d", s, got, ok, n)
		}
	})
}

func withThousands(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	out := ""
	for len(s) > 3 {
		out = "," + s[len(s)-3:] + out
		s = s[:len(s)-3]
	}
	out = s + out
	if neg {
		out = "-" + out
	}
	return out
}
