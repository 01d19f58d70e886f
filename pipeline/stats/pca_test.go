package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pcaData is n vectors of dimension d spread along known orthonormal
// directions with the given standard deviations, plus a little noise and
// an offset, drawn from a fixed seed.
func pcaData(n, d int, sds []float64, noise float64) (X [][]float32, dirs [][]float64) {
	src := rand.NewPCG(7, 11)
	dirs = make([][]float64, len(sds))
	for a := range dirs {
		dirs[a] = make([]float64, d)
		for j := range dirs[a] {
			dirs[a][j] = gaussian(src)
		}
	}
	dirs = orthonormalize(dirs)
	X = make([][]float32, n)
	for i := range X {
		x := make([]float32, d)
		for j := range x {
			x[j] = float32(3 + noise*gaussian(src))
		}
		for a, sd := range sds {
			c := sd * gaussian(src)
			for j := range x {
				x[j] += float32(c * dirs[a][j])
			}
		}
		X[i] = x
	}
	return X, dirs
}

func TestFitPCAFindsTheSpreadDirections(t *testing.T) {
	sds := []float64{10, 6, 3, 1.5}
	X, dirs := pcaData(400, 60, sds, 0.05)
	p, err := FitPCA(X, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Components) != 3 || len(p.Variance) != 3 {
		t.Fatalf("%d components, want 3", len(p.Components))
	}
	// The sample covariance's exact eigenvectors, by Jacobi on the d×d
	// matrix, are what the randomized solver must find.
	d := len(X[0])
	cov := make([][]float64, d)
	for j := range cov {
		cov[j] = make([]float64, d)
		for l := range cov[j] {
			for _, x := range X {
				cov[j][l] += (float64(x[j]) - p.Mean[j]) * (float64(x[l]) - p.Mean[l])
			}
			cov[j][l] /= float64(len(X) - 1)
		}
	}
	vals, vecs := jacobiEigen(cov)
	for a, comp := range p.Components {
		i := vals.order[a]
		exact := make([]float64, d)
		for j := range exact {
			exact[j] = vecs[j][i]
		}
		if c := math.Abs(dotF(comp, exact)); c < 1-1e-9 {
			t.Errorf("component %d: |cos| %.12f with the covariance's eigenvector, want 1", a, c)
		}
		if math.Abs(p.Variance[a]-vals.v[i]) > 1e-9*vals.v[i] {
			t.Errorf("component %d: variance %g, the covariance's eigenvalue %g", a, p.Variance[a], vals.v[i])
		}
		// The sample's directions are the drawn ones, up to sampling error.
		if c := math.Abs(dotF(comp, dirs[a])); c < 0.99 {
			t.Errorf("component %d: |cos| %.5f with the direction of sd %g, want ≥ 0.99", a, c, sds[a])
		}
		if v := p.Variance[a]; math.Abs(math.Sqrt(v)-sds[a])/sds[a] > 0.15 {
			t.Errorf("component %d: sd %.2f, the data was drawn with %g", a, math.Sqrt(v), sds[a])
		}
		for e, other := range p.Components {
			want := 0.0
			if e == a {
				want = 1
			}
			if got := dotF(comp, other); math.Abs(got-want) > 1e-9 {
				t.Errorf("components %d·%d = %g, want %g", a, e, got, want)
			}
		}
	}
	for a := 1; a < len(p.Variance); a++ {
		if p.Variance[a] > p.Variance[a-1] {
			t.Errorf("variances out of order: %v", p.Variance)
		}
	}
	// The mean projects to the origin; a point along the first direction to
	// its distance there.
	mean32 := make([]float32, len(p.Mean))
	along := make([]float32, len(p.Mean))
	for j, m := range p.Mean {
		mean32[j] = float32(m)
		along[j] = float32(m + 5*p.Components[0][j])
	}
	for a, v := range p.Project(mean32) {
		if math.Abs(v) > 1e-4 {
			t.Errorf("the mean projects to %g on component %d", v, a)
		}
	}
	if got := p.Project(along); math.Abs(got[0]-5) > 1e-4 || math.Abs(got[1]) > 1e-4 {
		t.Errorf("a point 5 along component 0 projects to %v", got)
	}
	if p.Project(make([]float32, 3)) != nil {
		t.Error("a vector of another length projected")
	}
}

func TestFitPCADeterministicAndBounded(t *testing.T) {
	X, _ := pcaData(50, 30, []float64{5, 2}, 0.5)
	a, err := FitPCA(X, 20, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FitPCA(X, 20, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Components) != 20 {
		t.Errorf("%d components of 50 noisy vectors, want the 20 asked for", len(a.Components))
	}
	for i := range a.Components {
		for j := range a.Components[i] {
			if a.Components[i][j] != b.Components[i][j] {
				t.Fatalf("the same data and seed gave different components (%d, %d)", i, j)
			}
		}
	}
	// A different seed finds the same leading directions.
	c, err := FitPCA(X, 2, 99)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Components {
		if cos := dotF(c.Components[i], a.Components[i]); cos < 0.999 {
			t.Errorf("component %d: seeds 3 and 99 agree to cos %.5f", i, cos)
		}
	}
	// Fewer vectors than components asked: at most n−1.
	small, err := FitPCA(X[:4], 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(small.Components) > 3 {
		t.Errorf("%d components of 4 vectors, want at most 3", len(small.Components))
	}
}

func TestFitPCARefuses(t *testing.T) {
	same := [][]float32{{1, 2}, {1, 2}, {1, 2}}
	for name, X := range map[string][][]float32{
		"one vector":    {{1, 2}},
		"ragged":        {{1, 2}, {1}},
		"all the same":  same,
		"no dimensions": {{}, {}},
	} {
		if _, err := FitPCA(X, 2, 1); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// BenchmarkFitPCA is the paper features' reduction at the size of a large
// fit: 2,000 judged turns of 3,072-dimensional embeddings (OpenAI's
// text-embedding-3-large) to 20 components.
func BenchmarkFitPCA(b *testing.B) {
	X, _ := pcaData(2000, 3072, []float64{5, 4, 3, 2, 1}, 0.2)
	b.ResetTimer()
	for range b.N {
		if _, err := FitPCA(X, 20, 1); err != nil {
			b.Fatal(err)
		}
	}
}
