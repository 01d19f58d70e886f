package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// mixed builds conversations of varying length and outcome mix, so the
// bootstrap distribution is not degenerate.
func mixed(convs int) []Verdict {
	var vs []Verdict
	for c := range convs {
		id := fmt.Sprintf("conv-%03d", c)
		for turn := range 2 + c%5 {
			o := []Outcome{AWins, AWins, Tie, BWins}[(c*7+turn*3)%4]
			vs = append(vs, Verdict{Conversation: id, Turn: turn + 2, Outcome: o})
		}
	}
	return vs
}

// iid gives every verdict its own conversation, which turns the cluster
// bootstrap into the ordinary one.
func iid(vs []Verdict) []Verdict {
	out := make([]Verdict, len(vs))
	for i, v := range vs {
		v.Conversation = fmt.Sprintf("unit-%06d", i)
		out[i] = v
	}
	return out
}

func TestClusterBootstrapDegenerate(t *testing.T) {
	tests := []struct {
		name string
		vs   []Verdict
		want Interval
	}{
		{"all wins", join(verdicts("a", AWins, 3), verdicts("b", AWins, 5)), Interval{1, 1}},
		{"all losses", join(verdicts("a", BWins, 3), verdicts("b", BWins, 5)), Interval{0, 0}},
		{"all ties", join(verdicts("a", Tie, 3), verdicts("b", Tie, 5)), Interval{0.5, 0.5}},
		{"one conversation", join(verdicts("a", AWins, 3), verdicts("a", BWins, 1)), Interval{0.75, 0.75}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClusterBootstrap(tt.vs, Options{Seed: 1}); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if iv := ClusterBootstrap(nil, Options{}); !math.IsNaN(iv.Lo) || !math.IsNaN(iv.Hi) {
		t.Errorf("no data: got %+v, want NaN ends", iv)
	}
}

func TestClusterBootstrapDeterministic(t *testing.T) {
	vs := mixed(60)
	opt := Options{Seed: 7}
	a := ClusterBootstrap(vs, opt)
	if b := ClusterBootstrap(vs, opt); a != b {
		t.Fatalf("same seed: %+v then %+v", a, b)
	}

	// Input order must not matter: clusters are visited in id order.
	shuffled := append([]Verdict(nil), vs...)
	rand.New(rand.NewPCG(99, 0)).Shuffle(len(shuffled), func(i, j int) {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	})
	if b := ClusterBootstrap(shuffled, opt); a != b {
		t.Errorf("shuffled input: %+v, want %+v", b, a)
	}

	if b := ClusterBootstrap(vs, Options{Seed: 8}); a == b {
		t.Errorf("seeds 7 and 8 gave the same interval %+v", a)
	}
	wr := WinRate(vs)
	if !a.Contains(wr) || a.Width() <= 0 {
		t.Errorf("interval %+v should be proper and contain the win rate %v", a, wr)
	}
}

// The golden interval pins the resampling recipe (PCG(seed, 0), Lemire
// draws, sorted ids, type-7 percentiles): a change means old runs'
// intervals can no longer be reproduced, so it must be deliberate. The
// values come from testdata/bootstrap_ref.py, an independent python3
// re-implementation of the documented recipe, and agree to the last bit.
func TestClusterBootstrapGolden(t *testing.T) {
	got := ClusterBootstrap(mixed(60), Options{Seed: 42})
	want := Interval{0.5965665236051502, 0.6527239876897541}
	if got != want {
		t.Errorf("got {%.17g, %.17g}, want {%.17g, %.17g}", got.Lo, got.Hi, want.Lo, want.Hi)
	}
}

// Copying every turn of a conversation many times adds no information. The
// cluster bootstrap knows that; an i.i.d. bootstrap over the same verdicts
// does not and becomes far too confident.
func TestClusterBootstrapDuplicatedTurns(t *testing.T) {
	const convs, copies = 40, 25
	var base, dup []Verdict
	for c := range convs {
		o := AWins
		if c%2 == 1 {
			o = BWins
		}
		id := fmt.Sprintf("conv-%02d", c)
		base = append(base, Verdict{Conversation: id, Turn: 2, Outcome: o})
		dup = append(dup, verdicts(id, o, copies)...)
	}
	opt := Options{Seed: 3}

	clustered := ClusterBootstrap(dup, opt)
	flat := ClusterBootstrap(iid(dup), opt)
	if ratio := clustered.Width() / flat.Width(); ratio < 3 {
		// Expected about sqrt(25) = 5.
		t.Errorf("cluster width %.4f vs i.i.d. %.4f: ratio %.2f, want > 3", clustered.Width(), flat.Width(), ratio)
	}
	// Equal-sized clusters with the same ids: every resampled rate is the
	// same rational number as without the copies, so the intervals match.
	if one := ClusterBootstrap(base, opt); one != clustered {
		t.Errorf("with copies %+v, without %+v: want equal", clustered, one)
	}
	// The i.i.d. bootstrap is about as narrow as Wilson on all copies,
	// which is the mistake the clustering avoids.
	w := Wilson(float64(convs*copies/2), convs*copies, 0.95)
	if r := flat.Width() / w.Width(); r < 0.8 || r > 1.2 {
		t.Errorf("i.i.d. bootstrap width %.4f vs Wilson %.4f", flat.Width(), w.Width())
	}
}

func TestClusterBootstrapLevel(t *testing.T) {
	vs := mixed(60)
	w90 := ClusterBootstrap(vs, Options{Seed: 1, Level: 0.90})
	w99 := ClusterBootstrap(vs, Options{Seed: 1, Level: 0.99})
	if !(w90.Lo > w99.Lo && w90.Hi < w99.Hi) {
		t.Errorf("90%% %+v should nest inside 99%% %+v", w90, w99)
	}
}

func TestQuantileType7(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	tests := []struct{ q, want float64 }{
		{0, 1}, {0.25, 2}, {0.5, 3}, {0.1, 1.4}, {0.975, 4.9}, {1, 5},
	}
	for _, tt := range tests {
		if got := quantile(xs, tt.q); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
}

func TestBoundedDrawRange(t *testing.T) {
	src := rand.NewPCG(1, 0)
	var seen [7]int
	for range 70000 {
		seen[boundedDraw(src, 7)]++
	}
	for i, c := range seen {
		if c < 9000 || c > 11000 {
			t.Errorf("value %d drawn %d times of 70000", i, c)
		}
	}
}

// TestMeanBootstrap: a constant sample has a point interval at its value;
// a spread sample's interval holds its mean and lies within its range; the
// same seed gives the same interval.
func TestMeanBootstrap(t *testing.T) {
	if iv := MeanBootstrap([]float64{0.5, 0.5, 0.5}, Options{}); iv.Lo != 0.5 || iv.Hi != 0.5 {
		t.Errorf("constant: %+v", iv)
	}
	xs := []float64{-1, 0, 0, 1, 1, 1, 0, -1, 1, 1}
	a, b := MeanBootstrap(xs, Options{Seed: 7}), MeanBootstrap(xs, Options{Seed: 7})
	if a != b || !a.Contains(0.3) || a.Lo < -1 || a.Hi > 1 || a.Width() <= 0 {
		t.Errorf("spread: %+v %+v", a, b)
	}
	if iv := MeanBootstrap(nil, Options{}); !math.IsNaN(iv.Lo) {
		t.Errorf("empty: %+v", iv)
	}
}
