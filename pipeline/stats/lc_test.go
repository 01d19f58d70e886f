package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// lcWorld generates judged turns whose expected score follows the
// length-controlled model exactly: E[score | Δ] = σ(alpha + beta·tanh(Δ/sd))
// with Δ = LenA − LenB ~ Normal(shift, sd). A tie has probability tieP and
// the rest are wins with the probability that keeps that expectation. The
// true length-controlled rate is σ(alpha).
type lcWorld struct {
	convs       int
	alpha, beta float64
	shift, sd   float64
	tieP        float64
	seed        uint64
}

func (w lcWorld) verdicts() []LengthVerdict {
	rng := rand.New(rand.NewPCG(w.seed, 1))
	var vs []LengthVerdict
	for c := range w.convs {
		id := fmt.Sprintf("conv-%05d", c)
		for range 1 + rng.IntN(4) {
			lenB := 1500 + rng.IntN(1000)
			delta := int(math.Round(w.shift + w.sd*rng.NormFloat64()))
			u := lcRate(w.alpha + w.beta*math.Tanh(float64(delta)/w.sd))
			o := BWins
			switch r := rng.Float64(); {
			case r < w.tieP:
				o = Tie
			case rng.Float64() < (u-w.tieP/2)/(1-w.tieP):
				o = AWins
			}
			vs = append(vs, LengthVerdict{Conversation: id, Outcome: o, LenA: max(0, lenB+delta), LenB: lenB})
		}
	}
	return vs
}

// A judge that prefers longer answers, and A's answers are longer: the raw
// win rate overstates A, the length-controlled rate recovers the rate at
// equal lengths. With about 7,500 verdicts the standard error of the LC
// rate is about 0.01; the tolerance is 0.03.
func TestLCRecoversTrueRate(t *testing.T) {
	w := lcWorld{convs: 3000, alpha: -0.4, beta: 1.5, shift: 250, sd: 400, tieP: 0.2, seed: 11}
	truth := lcRate(w.alpha)
	r, err := LengthControlledWinRate(w.verdicts(), Options{Seed: 3, Resamples: 400})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("n %d convs %d raw %.4f LC %.4f CI [%.4f, %.4f] slope %.3f scale %.1f (true LC %.4f)",
		r.N, r.Conversations, r.WinRate, r.LCWinRate, r.Bootstrap.Lo, r.Bootstrap.Hi, r.Slope, r.Scale, truth)
	if math.Abs(r.LCWinRate-truth) > 0.03 {
		t.Errorf("LC rate %.4f, true %.4f: off by more than 0.03", r.LCWinRate, truth)
	}
	if !r.Bootstrap.Contains(truth) {
		t.Errorf("interval [%.4f, %.4f] misses the true rate %.4f", r.Bootstrap.Lo, r.Bootstrap.Hi, truth)
	}
	if r.WinRate-truth < 0.1 || r.Bootstrap.Contains(r.WinRate) {
		t.Errorf("raw rate %.4f should be biased well above %.4f and outside the LC interval", r.WinRate, truth)
	}
	if math.Abs(r.Slope-w.beta) > 0.3 {
		t.Errorf("slope %.3f, true %.3f", r.Slope, w.beta)
	}
	if math.Abs(r.Scale-w.sd) > 20 {
		t.Errorf("scale %.1f, want about %.0f", r.Scale, w.sd)
	}
	if r.Warning != "" {
		t.Errorf("unexpected warning %q", r.Warning)
	}

	// No length effect and no length bias: LC and raw agree.
	w0 := lcWorld{convs: 3000, alpha: 0.3, beta: 0, shift: 0, sd: 400, tieP: 0.2, seed: 12}
	r0, err := LengthControlledWinRate(w0.verdicts(), Options{Seed: 3, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r0.LCWinRate-r0.WinRate) > 0.01 || math.Abs(r0.LCWinRate-lcRate(w0.alpha)) > 0.03 {
		t.Errorf("no length effect: LC %.4f raw %.4f true %.4f", r0.LCWinRate, r0.WinRate, lcRate(w0.alpha))
	}
}

// lcMixed is a fixture of conversations with mixed outcomes and lengths,
// added in scrambled id order.
func lcMixed(convs int, sameLength bool) []LengthVerdict {
	var vs []LengthVerdict
	for i := range convs {
		c := (i * 37) % convs
		id := fmt.Sprintf("c%03d", c)
		for turn := range 1 + c%4 {
			o := []Outcome{AWins, AWins, Tie, BWins, BWins}[(c*7+turn*3)%5]
			la, lb := 400+(c*53+turn*31)%700, 400+(c*29+turn*17)%500
			if o == AWins {
				la += 150 // longer answers win more often
			}
			if sameLength {
				lb = la
			}
			vs = append(vs, LengthVerdict{Conversation: id, Outcome: o, LenA: la, LenB: lb})
		}
	}
	return vs
}

// With no length differences the model has only its intercept: the LC
// rate is the raw rate, and the bootstrap, drawing the same conversations
// in the same order from the same generator, gives ClusterBootstrap's
// interval.
func TestLCWithoutLengthDifferenceIsClusterBootstrap(t *testing.T) {
	lvs := lcMixed(80, true)
	vs := make([]Verdict, len(lvs))
	for i, v := range lvs {
		vs[i] = Verdict{Conversation: v.Conversation, Outcome: v.Outcome}
	}
	opt := Options{Seed: 5, Resamples: 500}
	r, err := LengthControlledWinRate(lvs, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := ClusterBootstrap(vs, opt)
	if math.Abs(r.LCWinRate-WinRate(vs)) > 1e-12 || r.Slope != 0 || r.Scale != 0 {
		t.Errorf("LC %.17g slope %v scale %v, want raw %.17g, 0, 0", r.LCWinRate, r.Slope, r.Scale, WinRate(vs))
	}
	if math.Abs(r.Bootstrap.Lo-want.Lo) > 1e-12 || math.Abs(r.Bootstrap.Hi-want.Hi) > 1e-12 {
		t.Errorf("interval %+v, ClusterBootstrap %+v", r.Bootstrap, want)
	}
}

// Swapping the strategies mirrors everything: the rate becomes one minus
// itself, the interval flips, the slope keeps its sign (longer still
// wins) and the intercept changes sign.
func TestLCSymmetry(t *testing.T) {
	vs := lcMixed(60, false)
	swapped := make([]LengthVerdict, len(vs))
	for i, v := range vs {
		swapped[i] = LengthVerdict{Conversation: v.Conversation, Outcome: v.Outcome.Swapped(), LenA: v.LenB, LenB: v.LenA}
	}
	opt := Options{Seed: 9, Resamples: 400}
	a, err := LengthControlledWinRate(vs, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LengthControlledWinRate(swapped, opt)
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-9
	if math.Abs(a.LCWinRate+b.LCWinRate-1) > tol || math.Abs(a.Intercept+b.Intercept) > tol || math.Abs(a.Slope-b.Slope) > tol {
		t.Errorf("A: LC %v (%v, %v); swapped: LC %v (%v, %v)", a.LCWinRate, a.Intercept, a.Slope, b.LCWinRate, b.Intercept, b.Slope)
	}
	if math.Abs(a.Bootstrap.Lo+b.Bootstrap.Hi-1) > tol || math.Abs(a.Bootstrap.Hi+b.Bootstrap.Lo-1) > tol {
		t.Errorf("intervals %+v and %+v are not mirror images", a.Bootstrap, b.Bootstrap)
	}
	if a.Slope <= 0 {
		t.Errorf("slope %v: the fixture's longer answers win, want > 0", a.Slope)
	}
}

// The unit of length does not matter: the feature is Δ over its own
// standard deviation.
func TestLCUnitFree(t *testing.T) {
	vs := lcMixed(60, false)
	scaled := make([]LengthVerdict, len(vs))
	for i, v := range vs {
		v.LenA, v.LenB = 4*v.LenA, 4*v.LenB
		scaled[i] = v
	}
	opt := Options{Seed: 2, Resamples: 300}
	a, _ := LengthControlledWinRate(vs, opt)
	b, _ := LengthControlledWinRate(scaled, opt)
	if math.Abs(a.LCWinRate-b.LCWinRate) > 1e-9 || math.Abs(a.Bootstrap.Lo-b.Bootstrap.Lo) > 1e-9 || math.Abs(b.Scale-4*a.Scale) > 1e-9 {
		t.Errorf("characters: %+v\nquadrupled: %+v", a, b)
	}
}

func TestLCDeterministic(t *testing.T) {
	vs := lcMixed(50, false)
	opt := Options{Seed: 7, Resamples: 300}
	a, _ := LengthControlledWinRate(vs, opt)
	b, _ := LengthControlledWinRate(vs, opt)
	if a != b {
		t.Fatalf("same seed: %+v then %+v", a, b)
	}
	shuffled := append([]LengthVerdict(nil), vs...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if c, _ := LengthControlledWinRate(shuffled, opt); c != a {
		t.Errorf("input order changed the result:\n%+v\n%+v", c, a)
	}
	if c, _ := LengthControlledWinRate(vs, Options{Seed: 8, Resamples: 300}); c.Bootstrap == a.Bootstrap {
		t.Errorf("seeds 7 and 8 gave the same interval %+v", a.Bootstrap)
	}
}

// exactLCFit fits the same penalised model on every verdict's own
// feature value, without the grid, by plain Newton iterations.
func exactLCFit(vs []LengthVerdict, scale float64) (a, b float64) {
	var xs, ss []float64
	for _, v := range vs {
		xs = append(xs, math.Tanh(float64(v.LenA-v.LenB)/scale))
		ss = append(ss, float64(score2(v.Outcome))/2)
	}
	for range 50 {
		var ga, gb, haa, hab, hbb float64
		for i, x := range xs {
			p := lcRate(a + b*x)
			ga += ss[i] - p
			gb += (ss[i] - p) * x
			w := p * (1 - p)
			haa += w
			hab += w * x
			hbb += w * x * x
		}
		gb -= b / lcSlopeVar
		hbb += 1 / lcSlopeVar
		det := haa*hbb - hab*hab
		a += (hbb*ga - hab*gb) / det
		b += (haa*gb - hab*ga) / det
	}
	return a, b
}

// The grid moves the fit by far less than its standard error.
func TestLCGridMatchesExactFit(t *testing.T) {
	w := lcWorld{convs: 1500, alpha: 0.2, beta: 2, shift: -100, sd: 300, tieP: 0.1, seed: 4}
	vs := w.verdicts()
	r, err := LengthControlledWinRate(vs, Options{Resamples: 10})
	if err != nil {
		t.Fatal(err)
	}
	a, b := exactLCFit(vs, r.Scale)
	t.Logf("grid: %.8f %.8f; exact: %.8f %.8f; LC %.8f vs %.8f", r.Intercept, r.Slope, a, b, r.LCWinRate, lcRate(a))
	if math.Abs(r.LCWinRate-lcRate(a)) > 2e-5 || math.Abs(r.Slope-b) > 1e-3 {
		t.Errorf("grid fit (%v, %v) vs exact (%v, %v)", r.Intercept, r.Slope, a, b)
	}
}

func TestLCEdgeCases(t *testing.T) {
	conv := func(id string, o Outcome, la, lb, n int) []LengthVerdict {
		vs := make([]LengthVerdict, n)
		for i := range vs {
			vs[i] = LengthVerdict{Conversation: id, Outcome: o, LenA: la + i, LenB: lb}
		}
		return vs
	}
	cat := func(parts ...[]LengthVerdict) []LengthVerdict {
		var vs []LengthVerdict
		for _, p := range parts {
			vs = append(vs, p...)
		}
		return vs
	}
	tests := []struct {
		name    string
		vs      []LengthVerdict
		rate    float64 // NaN: not estimable
		iv      Interval
		warning string // substring
	}{
		{"no data", nil, math.NaN(), nanInterval(), "nothing to estimate"},
		{"only invalid", conv("a", 0, 10, 5, 3), math.NaN(), nanInterval(), "3 verdicts without a valid outcome"},
		{"all wins", cat(conv("a", AWins, 10, 5, 3), conv("b", AWins, 1, 50, 2)), 1, Interval{1, 1}, "small n"},
		{"all losses", cat(conv("a", BWins, 10, 5, 3), conv("b", BWins, 1, 50, 2)), 0, Interval{0, 0}, "small n"},
		{"same difference everywhere", []LengthVerdict{{"a", AWins, 20, 10}, {"b", BWins, 30, 20}, {"c", Tie, 15, 5}}, math.NaN(), nanInterval(), "cannot be told apart"},
		// The longer answer always wins: the slope runs up to the ridge
		// and the rate at equal lengths is flagged as an extrapolation.
		{"length decides", cat(conv("a", AWins, 100, 10, 20), conv("b", BWins, 10, 100, 20), conv("c", AWins, 60, 20, 5)), -1, Interval{}, "extrapolation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := LengthControlledWinRate(tt.vs, Options{Seed: 1, Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case math.IsNaN(tt.rate):
				if !math.IsNaN(r.LCWinRate) || !math.IsNaN(r.Bootstrap.Lo) {
					t.Errorf("got %v %+v, want NaN", r.LCWinRate, r.Bootstrap)
				}
			case tt.rate >= 0:
				if r.LCWinRate != tt.rate || r.Bootstrap != tt.iv {
					t.Errorf("got %v %+v, want %v %+v", r.LCWinRate, r.Bootstrap, tt.rate, tt.iv)
				}
			default:
				if math.IsNaN(r.LCWinRate) || math.IsInf(r.Slope, 0) || math.IsNaN(r.Bootstrap.Lo) {
					t.Errorf("got %v slope %v %+v, want finite numbers", r.LCWinRate, r.Slope, r.Bootstrap)
				}
			}
			if !strings.Contains(r.Warning, tt.warning) {
				t.Errorf("warning %q, want it to mention %q", r.Warning, tt.warning)
			}
		})
	}
}

func TestLCAddConversationRejectsBadLengths(t *testing.T) {
	var d LCData
	if err := d.AddConversation([]LengthSample{{AWins, 10, 5}, {BWins, 3, 7}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]LengthSample{
		{{AWins, 10, 5}, {Tie, -1, 7}},
		{{AWins, math.MaxInt32 + 10, 5}},
	} {
		if err := d.AddConversation(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if d.N() != 2 || d.Conversations() != 1 {
		t.Errorf("a rejected conversation left data behind: n %d, conversations %d", d.N(), d.Conversations())
	}
	// A conversation with no valid verdict is not a cluster.
	if err := d.AddConversation([]LengthSample{{0, 1, 2}}); err != nil || d.Conversations() != 1 {
		t.Errorf("invalid-only conversation: err %v, conversations %d", err, d.Conversations())
	}
}

func BenchmarkLCFit(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("verdicts=%d", n), func(b *testing.B) {
			w := lcWorld{convs: n * 2 / 5, alpha: -0.4, beta: 1.5, shift: 250, sd: 400, tieP: 0.2, seed: 11}
			vs := w.verdicts()
			var d LCData
			var buf []LengthSample
			for i, v := range vs {
				buf = append(buf, LengthSample{v.Outcome, v.LenA, v.LenB})
				if i == len(vs)-1 || vs[i+1].Conversation != v.Conversation {
					if err := d.AddConversation(buf); err != nil {
						b.Fatal(err)
					}
					buf = buf[:0]
				}
			}
			b.Run("lc", func(b *testing.B) {
				var r LCResult
				for b.Loop() {
					r = d.Fit(Options{Seed: 1}) // 2000 resamples
				}
				b.ReportMetric(float64(d.N()), "verdicts")
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/fit")
				b.Logf("n %d: raw %.4f LC %.4f [%.4f, %.4f]", r.N, r.WinRate, r.LCWinRate, r.Bootstrap.Lo, r.Bootstrap.Hi)
			})
			// The raw win rate's interval on the same verdicts, for a
			// ratio measured in the same run.
			b.Run("raw", func(b *testing.B) {
				raw := make([]Verdict, len(vs))
				for i, v := range vs {
					raw[i] = Verdict{Conversation: v.Conversation, Outcome: v.Outcome}
				}
				for b.Loop() {
					ClusterBootstrap(raw, Options{Seed: 1})
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/fit")
			})
		})
	}
}

// Whatever verdicts arrive, AddConversation either takes them or says why,
// and Fit never panics and gives a rate in [0, 1] or NaN with a warning.
func FuzzLCData(f *testing.F) {
	f.Add([]byte{1, 10, 5, 2, 3, 9, 3, 4, 4, 0, 1, 1})
	f.Add([]byte{1, 200, 0, 1, 200, 0, 2, 0, 200})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var d LCData
		var conv []LengthSample
		for i := 0; i+2 < len(raw); i += 3 {
			// Outcome byte: low two bits the outcome (0 invalid), bit 7
			// ends the conversation; lengths scaled so some differences
			// are huge.
			o, la, lb := raw[i], int(raw[i+1]), int(raw[i+2])
			conv = append(conv, LengthSample{Outcome: Outcome(o & 3), LenA: la * la * la, LenB: lb})
			if o&0x80 != 0 {
				if err := d.AddConversation(conv); err != nil {
					t.Fatalf("valid lengths rejected: %v", err)
				}
				conv = conv[:0]
			}
		}
		if err := d.AddConversation(conv); err != nil {
			t.Fatalf("valid lengths rejected: %v", err)
		}
		r := d.Fit(Options{Seed: 1, Resamples: 20})
		for _, v := range []float64{r.LCWinRate, r.Bootstrap.Lo, r.Bootstrap.Hi} {
			if v < 0 || v > 1 {
				t.Fatalf("rate %v out of [0, 1]: %+v", v, r)
			}
		}
		if math.IsNaN(r.LCWinRate) && r.Warning == "" {
			t.Fatalf("no rate and no warning: %+v", r)
		}
		if !math.IsNaN(r.LCWinRate) && r.Bootstrap.Lo > r.Bootstrap.Hi {
			t.Fatalf("interval %+v", r.Bootstrap)
		}
	})
}
