package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// PCA is a projection onto the leading principal components of some data:
// x ↦ Components·(x − Mean).
type PCA struct {
	Mean []float64
	// Components are orthonormal rows of the data's dimension, by
	// decreasing Variance (the variance of the data along each). A
	// component's sign is fixed by making its largest entry positive, so
	// the same data gives the same projection.
	Components [][]float64
	Variance   []float64
}

// pcaOversample and pcaPower are the randomized solver's extra directions
// and power iterations (Halko, Martinsson and Tropp 2011, §4.3–4.5): with
// 10 extra directions and 7 iterations the leading 20 components of
// embedding data agree with an exact eigendecomposition to many digits,
// while a pass costs two products with the data, not the d×d covariance
// (3,072² for large embedding models).
const (
	pcaOversample = 10
	pcaPower      = 7
)

// FitPCA finds the k leading principal components of the rows of X (all of
// one length d), fewer when the data has fewer (at most n−1 and d). It is a
// randomized subspace iteration started from Gaussian directions drawn from
// a PCG seeded with seed: the same X, k and seed give the same PCA.
func FitPCA(X [][]float32, k int, seed uint64) (PCA, error) {
	n := len(X)
	if n < 2 {
		return PCA{}, fmt.Errorf("principal components of %d vectors: need at least 2", n)
	}
	d := len(X[0])
	for i, x := range X {
		if len(x) != d {
			return PCA{}, fmt.Errorf("principal components: vector %d has %d dimensions, vector 0 has %d", i, len(x), d)
		}
	}
	if d == 0 || k <= 0 {
		return PCA{}, errors.New("principal components: nothing to fit")
	}
	k = min(k, n-1, d)
	p := min(k+pcaOversample, n, d)
	mean := make([]float64, d)
	for _, x := range X {
		for j, v := range x {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	c := centred{X: X, mean: mean}
	src := rand.NewPCG(seed, 0)
	omega := make([][]float64, p) // p directions of length d
	for a := range omega {
		omega[a] = make([]float64, d)
		for j := range omega[a] {
			omega[a][j] = gaussian(src)
		}
	}
	q := orthonormalize(c.mul(omega)) // p vectors of length n
	for range pcaPower {
		z := orthonormalize(c.mulT(q))
		q = orthonormalize(c.mul(z))
	}
	// B = Qᵀ·Xc (p×d); B·Bᵀ's eigenvectors give the right singular
	// vectors Bᵀ·u / σ, the components.
	b := c.mulT(q)
	bbt := make([][]float64, len(b))
	for a := range b {
		bbt[a] = make([]float64, len(b))
		for e := range b {
			bbt[a][e] = dotF(b[a], b[e])
		}
	}
	vals, vecs := jacobiEigen(bbt)
	out := PCA{Mean: mean}
	for _, i := range vals.order {
		if len(out.Components) == k {
			break
		}
		s2 := vals.v[i]
		if s2 <= 1e-12*max(vals.v[vals.order[0]], 1e-300) {
			break // the data spans no further direction
		}
		comp := make([]float64, d)
		for a := range b {
			w := vecs[a][i]
			for j, v := range b[a] {
				comp[j] += w * v
			}
		}
		norm := math.Sqrt(dotF(comp, comp))
		big := 0
		for j := range comp {
			comp[j] /= norm
			if math.Abs(comp[j]) > math.Abs(comp[big]) {
				big = j
			}
		}
		if comp[big] < 0 {
			for j := range comp {
				comp[j] = -comp[j]
			}
		}
		out.Components = append(out.Components, comp)
		out.Variance = append(out.Variance, s2/float64(n-1))
	}
	if len(out.Components) == 0 {
		return PCA{}, errors.New("principal components: the vectors are all the same")
	}
	return out, nil
}

// Project returns x's coordinates on the components; a vector of another
// length than Mean gives nil.
func (p PCA) Project(x []float32) []float64 {
	if len(x) != len(p.Mean) {
		return nil
	}
	out := make([]float64, len(p.Components))
	for a, comp := range p.Components {
		var s float64
		for j, v := range x {
			s += comp[j] * (float64(v) - p.Mean[j])
		}
		out[a] = s
	}
	return out
}

// centred is X with its column means taken off, never built whole.
type centred struct {
	X    [][]float32
	mean []float64
}

// mul returns Xc·v for each v (length d): vectors of length n.
func (c centred) mul(vs [][]float64) [][]float64 {
	out := make([][]float64, len(vs))
	for a, v := range vs {
		mv := dotF(c.mean, v)
		col := make([]float64, len(c.X))
		for i, x := range c.X {
			var s float64
			for j, xv := range x {
				s += float64(xv) * v[j]
			}
			col[i] = s - mv
		}
		out[a] = col
	}
	return out
}

// mulT returns Xcᵀ·u for each u (length n): vectors of length d.
func (c centred) mulT(us [][]float64) [][]float64 {
	d := len(c.mean)
	out := make([][]float64, len(us))
	for a, u := range us {
		row := make([]float64, d)
		var sum float64
		for i, x := range c.X {
			w := u[i]
			sum += w
			for j, xv := range x {
				row[j] += w * float64(xv)
			}
		}
		for j := range row {
			row[j] -= sum * c.mean[j]
		}
		out[a] = row
	}
	return out
}

// orthonormalize applies modified Gram–Schmidt, twice for accuracy, to vs
// in place; a vector left with no new direction becomes zero.
func orthonormalize(vs [][]float64) [][]float64 {
	for range 2 {
		for a := range vs {
			for e := range a {
				r := dotF(vs[e], vs[a])
				for j := range vs[a] {
					vs[a][j] -= r * vs[e][j]
				}
			}
			norm := math.Sqrt(dotF(vs[a], vs[a]))
			for j := range vs[a] {
				if norm > 1e-300 {
					vs[a][j] /= norm
				} else {
					vs[a][j] = 0
				}
			}
		}
	}
	return vs
}

func dotF(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// gaussian is a standard normal draw by the Box–Muller transform from two
// PCG outputs, so the sequence depends on the PCG alone.
func gaussian(src *rand.PCG) float64 {
	u1 := (float64(src.Uint64()>>11) + 0.5) / (1 << 53)
	u2 := float64(src.Uint64()>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// eigenvalues are a symmetric matrix's eigenvalues and their indices by
// decreasing value.
type eigenvalues struct {
	v     []float64
	order []int
}

// jacobiEigen diagonalises the small symmetric matrix a (changed in place)
// by cyclic Jacobi rotations; column i of vecs is the eigenvector of
// eigenvalue v[i].
func jacobiEigen(a [][]float64) (eigenvalues, [][]float64) {
	n := len(a)
	vecs := make([][]float64, n)
	for i := range vecs {
		vecs[i] = make([]float64, n)
		vecs[i][i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		var off, diag float64
		for i := range n {
			diag += a[i][i] * a[i][i]
			for j := i + 1; j < n; j++ {
				off += a[i][j] * a[i][j]
			}
		}
		if off <= 1e-30*max(diag, 1e-300) {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				if a[p][q] == 0 {
					continue
				}
				theta := (a[q][q] - a[p][p]) / (2 * a[p][q])
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				cs := 1 / math.Sqrt(t*t+1)
				sn := t * cs
				for k := range n {
					akp, akq := a[k][p], a[k][q]
					a[k][p], a[k][q] = cs*akp-sn*akq, sn*akp+cs*akq
				}
				for k := range n {
					apk, aqk := a[p][k], a[q][k]
					a[p][k], a[q][k] = cs*apk-sn*aqk, sn*apk+cs*aqk
				}
				for k := range n {
					vkp, vkq := vecs[k][p], vecs[k][q]
					vecs[k][p], vecs[k][q] = cs*vkp-sn*vkq, sn*vkp+cs*vkq
				}
			}
		}
	}
	ev := eigenvalues{v: make([]float64, n), order: make([]int, n)}
	for i := range n {
		ev.v[i], ev.order[i] = a[i][i], i
	}
	sort.SliceStable(ev.order, func(x, y int) bool { return ev.v[ev.order[x]] > ev.v[ev.order[y]] })
	return ev, vecs
}
