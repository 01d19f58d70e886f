#!/usr/bin/env python3
"""Independent re-implementation of ClusterBootstrap, used to derive the
golden interval in bootstrap_test.go: PCG-DXSM as in Go's math/rand/v2
(NewPCG(seed, 0)), Lemire's bounded draw, conversations in sorted id order,
type-7 percentiles. Only the standard library; run: python3 bootstrap_ref.py
"""
M64 = (1 << 64) - 1
MUL = (2549297995355413924 << 64) | 4865540595714422341
INC = (6364136223846793005 << 64) | 1442695040888963407


class PCG:
    def __init__(self, seed1, seed2):
        self.state = (seed1 << 64) | seed2

    def uint64(self):
        self.state = (self.state * MUL + INC) & ((1 << 128) - 1)
        hi, lo = self.state >> 64, self.state & M64
        hi ^= hi >> 32
        hi = (hi * 0xDA942042E4DD58B5) & M64
        hi ^= hi >> 48
        return (hi * (lo | 1)) & M64


def bounded(src, n):
    m = src.uint64() * n
    hi, lo = m >> 64, m & M64
    if lo < n:
        thresh = ((1 << 64) - n) % n
        while lo < thresh:
            m = src.uint64() * n
            hi, lo = m >> 64, m & M64
    return hi


def mixed(convs):
    # Same data as mixed() in bootstrap_test.go: 2 = A wins, 1 = tie, 0 = B wins.
    out = {}
    for c in range(convs):
        s2 = n = 0
        for turn in range(2 + c % 5):
            s2 += [2, 2, 1, 0][(c * 7 + turn * 3) % 4]
            n += 1
        out["conv-%03d" % c] = (s2, n)
    return [out[k] for k in sorted(out)]


def quantile(xs, q):
    h = (len(xs) - 1) * q
    i = int(h // 1)
    if i >= len(xs) - 1:
        return xs[-1]
    f = h - i
    return xs[i] if f == 0 else xs[i] + f * (xs[i + 1] - xs[i])


def bootstrap(cs, seed, resamples=2000, level=0.95):
    src = PCG(seed, 0)
    rates = []
    for _ in range(resamples):
        s2 = n = 0
        for _ in range(len(cs)):
            a, b = cs[bounded(src, len(cs))]
            s2 += a
            n += b
        rates.append(s2 / (2 * n))  # int / int: correctly rounded, as in Go
    rates.sort()
    alpha = 1 - level
    return quantile(rates, alpha / 2), quantile(rates, 1 - alpha / 2)


if __name__ == "__main__":
    lo, hi = bootstrap(mixed(60), 42)
    print(repr(lo), repr(hi))
