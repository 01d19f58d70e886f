package filter_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/filter"
)

// userConv is a conversation with the given user turns, each answered by
// the same assistant text.
func userConv(answer string, turns ...string) *conv.Conversation {
	c := &conv.Conversation{ID: "c"}
	for _, u := range turns {
		c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: u}, conv.Message{Role: conv.Assistant, Content: answer})
	}
	return c
}

func mustNear(t testing.TB, o filter.NearOptions) *filter.Near {
	t.Helper()
	n, err := filter.NewNear(o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func similarity(t testing.TB, n *filter.Near, a, b *conv.Conversation) float64 {
	t.Helper()
	sa, _, okA := n.Sketch(a)
	sb, _, okB := n.Sketch(b)
	if !okA || !okB {
		t.Fatalf("no signature (%v, %v)", okA, okB)
	}
	s, err := filter.Similarity(sa, sb)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNearBandingFindsPairsAtTheThreshold(t *testing.T) {
	for _, tc := range []struct {
		threshold   float64
		bands, rows int
	}{
		{0.5, 42, 3},
		{0.8, 18, 7},
		{0.9, 10, 12},
		{1, 1, 128},
	} {
		n := mustNear(t, filter.NearOptions{Threshold: tc.threshold})
		b, r := n.Banding()
		if b != tc.bands || r != tc.rows {
			t.Errorf("threshold %v: %d bands of %d rows, want %d of %d", tc.threshold, b, r, tc.bands, tc.rows)
		}
		if b*r > filter.Permutations {
			t.Errorf("threshold %v: %d×%d minimums, the signature has %d", tc.threshold, b, r, filter.Permutations)
		}
		p := func(b, r int) float64 { return 1 - math.Pow(1-math.Pow(tc.threshold, float64(r)), float64(b)) }
		if got := p(b, r); got < 0.95 {
			t.Errorf("threshold %v: a pair at the threshold is a candidate with probability %.3f, want at least 0.95", tc.threshold, got)
		}
		// One row more per band would miss pairs at the threshold.
		if r < filter.Permutations {
			if got := p(filter.Permutations/(r+1), r+1); got >= 0.95 {
				t.Errorf("threshold %v: %d rows would do (%.3f)", tc.threshold, r+1, got)
			}
		}
	}
}

func TestNearSketchReadsTheUserTurnsOnly(t *testing.T) {
	n := mustNear(t, filter.NearOptions{})
	prompt := "please write a python function that merges two sorted lists into one sorted list without using sort"
	for _, tc := range []struct {
		name string
		a, b *conv.Conversation
		want func(float64) bool
	}{
		{"other answers", userConv("Sure, here it is.", prompt), userConv("I cannot help with that, sorry.", prompt), func(s float64) bool { return s == 1 }},
		{"case and punctuation", userConv("x", prompt), userConv("x", strings.ToUpper(prompt)+"!!! ..."), func(s float64) bool { return s == 1 }},
		{"a system message", userConv("x", prompt), func() *conv.Conversation { c := userConv("x", prompt); c.System = "You are terse."; return c }(), func(s float64) bool { return s == 1 }},
		{"split into two turns", userConv("x", prompt), userConv("x", strings.SplitAfterN(prompt, "merges ", 2)...), func(s float64) bool { return s == 1 }},
		{"another prompt", userConv("x", prompt), userConv("x", "what is the capital of australia and why is it not sydney or melbourne"), func(s float64) bool { return s < 0.2 }},
		{"unspaced script", userConv("x", "我想学习如何用编程语言写一个排序算法"), userConv("x", "我想学习如何用编程语言写一个排序算法。"), func(s float64) bool { return s == 1 }},
		{"unspaced script, other text", userConv("x", "我想学习如何用编程语言写一个排序算法"), userConv("x", "今天天气很好我们去公园散步吧"), func(s float64) bool { return s < 0.2 }},
		{"one edit in a short prompt", userConv("x", prompt), userConv("x", strings.Replace(prompt, "python", "golang", 1)), func(s float64) bool { return s > 0.45 && s < 0.9 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s := similarity(t, n, tc.a, tc.b); !tc.want(s) {
				t.Errorf("similarity %.3f", s)
			}
		})
	}
}

func TestNearSketchOfNothingToCompare(t *testing.T) {
	n := mustNear(t, filter.NearOptions{})
	for _, c := range []*conv.Conversation{
		{ID: "none"},
		userConv("an answer with words", "  ...  !!! "),
		{ID: "assistant only", Messages: []conv.Message{{Role: conv.Assistant, Content: "hello there"}}},
	} {
		if sig, bands, ok := n.Sketch(c); ok || sig != nil || bands != nil {
			t.Errorf("%s: sketched (%d bytes, %d bands)", c.ID, len(sig), len(bands))
		}
	}
}

func TestNearExactSimilarity(t *testing.T) {
	n := mustNear(t, filter.NearOptions{})
	thirty := strings.Fields("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty a b c d e f g h i j")
	edited := append([]string(nil), thirty...)
	edited[15] = "changed"
	for _, tc := range []struct {
		name string
		a, b string
		want float64
	}{
		{"identical", "same words here and there", "Same words, here and there!", 1},
		{"disjoint", "alpha beta gamma delta", "one two three four", 0},
		// 28 shingles each; the edit changes 3: 25 shared of 31.
		{"one edit in thirty words", strings.Join(thirty, " "), strings.Join(edited, " "), 25.0 / 31},
		{"no words", "...", "!!!", 0},
		{"shorter than a shingle", "hi there", "hi there", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := n.ExactSimilarity(userConv("", tc.a), userConv("", tc.b))
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("exact similarity %v, want %v", got, tc.want)
			}
		})
	}
}

// shingles is the exact shingle set of words, as the sketch defines it.
func shingles(words []string, k int) map[string]bool {
	set := map[string]bool{}
	if len(words) <= k {
		set[strings.Join(words, " ")] = true
		return set
	}
	for i := k; i <= len(words); i++ {
		set[strings.Join(words[i-k:i], " ")] = true
	}
	return set
}

func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for s := range a {
		if b[s] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// The estimate follows the exact Jaccard similarity of the shingle sets as
// well as 128 independent minimums would: over pairs of every similarity,
// the mean error is within a quarter of what their standard errors predict,
// there is no bias, and no pair is off by more than four standard errors.
func TestNearSimilarityEstimatesJaccard(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	vocab := make([]string, 3000)
	for i := range vocab {
		vocab[i] = "w" + string(rune('a'+i%26)) + strings.Repeat(string(rune('a'+i/26%26)), 1+i/676)
	}
	for _, k := range []int{1, 3, 5} {
		n := mustNear(t, filter.NearOptions{ShingleWords: k})
		var sumErr, sumWant, bias float64
		const pairs = 300
		for p := range pairs {
			a := make([]string, 30+r.IntN(150))
			for i := range a {
				a[i] = vocab[r.IntN(len(vocab))]
			}
			b := append([]string(nil), a...)
			// From no edit to every word edited, so the pairs span every
			// similarity.
			edits := p * len(b) / pairs
			for range edits {
				b[r.IntN(len(b))] = vocab[r.IntN(len(vocab))]
			}
			exact := jaccard(shingles(a, k), shingles(b, k))
			est := similarity(t, n, userConv("", strings.Join(a, " ")), userConv("", strings.Join(b, " ")))
			d := math.Abs(est - exact)
			se := math.Sqrt(exact * (1 - exact) / filter.Permutations)
			sumErr, sumWant, bias = sumErr+d, sumWant+math.Sqrt(2/math.Pi)*se, bias+est-exact
			if d > 4*se+0.02 {
				t.Errorf("k=%d: estimate %.3f, exact %.3f (%d words, %d edits)", k, est, exact, len(a), edits)
			}
		}
		// sqrt(2/π)·se is the mean absolute error of an unbiased estimate
		// with standard error se.
		if sumErr > 1.25*sumWant || math.Abs(bias/pairs) > 0.01 {
			t.Errorf("k=%d: mean error %.4f (independent minimums: %.4f), bias %.4f over %d pairs", k, sumErr/pairs, sumWant/pairs, bias/pairs, pairs)
		}
	}
}

func TestNearSimilarityRefusesWhatIsNotASignature(t *testing.T) {
	n := mustNear(t, filter.NearOptions{})
	sig, _, _ := n.Sketch(userConv("", "some words to sign here"))
	for _, tc := range []struct {
		name string
		a, b []byte
	}{
		{"empty", nil, nil},
		{"lengths differ", sig, sig[:len(sig)-4]},
		{"not whole minimums", sig[:7], sig[:7]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := filter.Similarity(tc.a, tc.b); !errors.Is(err, filter.ErrSignature) {
				t.Errorf("error %v, want ErrSignature", err)
			}
		})
	}
}

func TestNearOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     filter.NearOptions
		field string // "" when valid
	}{
		{"defaults", filter.NearOptions{}, ""},
		{"bounds", filter.NearOptions{Threshold: 0.5, ShingleWords: filter.MaxShingleWords}, ""},
		{"identical only", filter.NearOptions{Threshold: 1, ShingleWords: 1}, ""},
		{"threshold too low", filter.NearOptions{Threshold: 0.3}, "NearThreshold"},
		{"threshold above 1", filter.NearOptions{Threshold: 1.2}, "NearThreshold"},
		{"threshold NaN", filter.NearOptions{Threshold: math.NaN()}, "NearThreshold"},
		{"negative shingle", filter.NearOptions{ShingleWords: -1}, "NearShingleWords"},
		{"long shingle", filter.NearOptions{ShingleWords: filter.MaxShingleWords + 1}, "NearShingleWords"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			var fe *filter.FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Errorf("error %v, want one about %s", err, tc.field)
			}
			if _, nerr := filter.NewNear(tc.o); (nerr == nil) != (tc.field == "") {
				t.Errorf("NewNear error %v", nerr)
			}
		})
	}
	if d := (filter.NearOptions{}).WithDefaults(); d.Threshold != filter.DefaultNearThreshold || d.ShingleWords != filter.DefaultShingleWords {
		t.Errorf("defaults %+v", d)
	}
}

// FuzzNearSketch: any user text sketches without panicking, the same way
// twice, with one band key per band; a signature is identical to itself,
// and similarity is symmetric and within [0, 1].
func FuzzNearSketch(f *testing.F) {
	f.Add("write a function that sorts a list", "write a function that sorts a list please", uint8(3))
	f.Add("我想学习编程", "", uint8(1))
	f.Add("\xff\xfe broken \x80 utf8", "a b c d e f g", uint8(16))
	f.Fuzz(func(t *testing.T, a, b string, k uint8) {
		n, err := filter.NewNear(filter.NearOptions{ShingleWords: 1 + int(k)%filter.MaxShingleWords})
		if err != nil {
			t.Fatal(err)
		}
		bands, _ := n.Banding()
		ca, cb := userConv("reply", a), userConv("reply", b)
		sa, ka, okA := n.Sketch(ca)
		sa2, ka2, _ := n.Sketch(ca)
		if string(sa) != string(sa2) || len(ka) != len(ka2) {
			t.Fatal("two sketches of one text differ")
		}
		for i := range ka {
			if ka[i] != ka2[i] {
				t.Fatal("two sketches of one text have different band keys")
			}
		}
		sb, _, okB := n.Sketch(cb)
		if !okA || !okB {
			return
		}
		if len(ka) != bands || len(sa) != 4*filter.Permutations {
			t.Fatalf("%d band keys, %d signature bytes", len(ka), len(sa))
		}
		if s, err := filter.Similarity(sa, sa); err != nil || s != 1 {
			t.Fatalf("self-similarity %v, %v", s, err)
		}
		ab, err1 := filter.Similarity(sa, sb)
		ba, err2 := filter.Similarity(sb, sa)
		if err1 != nil || err2 != nil || ab != ba || ab < 0 || ab > 1 {
			t.Fatalf("similarity %v / %v (%v, %v)", ab, ba, err1, err2)
		}
	})
}

// BenchmarkNearSketch is the signature of a typical WildChat conversation's
// user side: three turns of about 40 words.
func BenchmarkNearSketch(b *testing.B) {
	n := mustNear(b, filter.NearOptions{})
	r := rand.New(rand.NewPCG(1, 2))
	turn := func() string {
		w := make([]string, 40)
		for i := range w {
			w[i] = fmt.Sprint("word", r.IntN(5000))
		}
		return strings.Join(w, " ")
	}
	c := userConv("an answer", turn(), turn(), turn())
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := n.Sketch(c); !ok {
			b.Fatal("no sketch")
		}
	}
}
