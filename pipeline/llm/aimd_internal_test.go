package llm

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"
)

// draw is a seeded, reproducible number in [0, 1).
func draw(seed uint64, parts ...int) float64 {
	h := fnv.New64a()
	fmt.Fprint(h, seed)
	for _, p := range parts {
		fmt.Fprintf(h, "/%d", p)
	}
	return float64(h.Sum64()%1_000_000) / 1_000_000
}

// simulate drives a in rounds of one round trip: each round fills every
// free slot, then answers each request, an overload signal with probability
// share(level it was sent at). It returns the limit after each round. The
// clock is simulated, so the result depends only on seed.
func simulate(a *aimd, rounds int, start time.Time, seed uint64, share func(level int) float64) []int {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	try := waiter{ctx: done} // never waits: a full semaphore refuses
	var limits []int
	now := start
	for r := range rounds {
		var slots []slot
		for {
			s, err := a.acquire(try)
			if err != nil {
				break
			}
			slots = append(slots, s)
		}
		for i, s := range slots {
			a.release()
			if draw(seed, r, i) < share(s.level) {
				a.congested(s, now)
			} else {
				a.succeeded(s, now)
			}
		}
		now = now.Add(time.Second)
		limits = append(limits, a.current())
	}
	return limits
}

func mean(xs []int) float64 {
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(len(xs))
}

func TestAIMDKeepsConcurrencyUnderRandomRateLimits(t *testing.T) {
	for seed := range uint64(10) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			a := newAIMD(8, 0)
			// 30% of answers are 429 whatever the load: about one request
			// in three, at every level, for twenty minutes.
			limits := simulate(a, 1200, time.Unix(0, 0), seed, func(int) float64 { return 0.3 })
			lowest := 8
			for _, l := range limits {
				lowest = min(lowest, l)
			}
			if lowest < 4 {
				t.Errorf("the limit fell to %d: only probes at half the maximum were expected", lowest)
			}
			// Short probes only, one every few minutes.
			t.Logf("mean limit %.2f, last 100 %.2f, lowest %d", mean(limits), mean(limits[len(limits)-100:]), lowest)
			if m := mean(limits); m < 7 {
				t.Errorf("mean limit %.2f over 1200 round trips, want >= 7 (limits %v)", m, limits[:60])
			}
			if m := mean(limits[len(limits)-100:]); m < 7 {
				t.Errorf("mean limit %.2f over the last 100 round trips, want >= 7", m)
			}
		})
	}
}

func TestAIMDCutsWhenOverloadFollowsTheLoad(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			a := newAIMD(16, 0)
			// The server takes 5 requests at a time and refuses the rest:
			// the share of 429s grows with the level we send at.
			limits := simulate(a, 600, time.Unix(0, 0), seed, func(level int) float64 {
				return max(0, float64(level-5)/float64(level))
			})
			t.Logf("mean limit %.2f after 100 round trips", mean(limits[100:]))
			if m := mean(limits[100:]); m > 9 {
				t.Errorf("mean limit %.2f against a server that takes 5, want <= 9 (limits %v)", m, limits[:100])
			}
			for _, l := range limits {
				if l < 4 {
					t.Fatalf("the limit fell to %d, below the floor of 4", l)
				}
			}
		})
	}
}

func TestAIMDCountsABurstOnce(t *testing.T) {
	a := newAIMD(8, 1)
	now := time.Unix(0, 0)
	w := waiter{ctx: context.Background()}
	var slots []slot
	for range 8 {
		s, err := a.acquire(w)
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, s)
	}
	changes := 0
	for _, s := range slots {
		a.release()
		if _, changed := a.congested(s, now); changed {
			changes++
		}
	}
	if changes != 1 || a.current() != 4 {
		t.Errorf("%d changes to %d after one burst of 8, want one cut to 4", changes, a.current())
	}
}

func TestAIMDProbeGoesBackWhenNothingEases(t *testing.T) {
	a := newAIMD(8, 0)
	now := time.Unix(0, 0)
	w := waiter{ctx: context.Background()}
	answer := func(congested bool) {
		s, err := a.acquire(w)
		if err != nil {
			t.Fatal(err)
		}
		a.release()
		if congested {
			a.congested(s, now)
		} else {
			a.succeeded(s, now)
		}
	}
	answer(true) // nothing known below: a probe at 4
	if got := a.current(); got != 4 {
		t.Fatalf("limit %d after the first 429, want a probe at 4", got)
	}
	// At 4 one answer in two is a 429, as at 8: the probe sees no easing.
	for i := range probeSamples {
		answer(i%2 == 0)
	}
	if got := a.current(); got != 8 {
		t.Errorf("limit %d after a probe that eased nothing, want 8 again", got)
	}
	// Level 4 is now known: the same 429s at 8 cut nothing.
	for range 20 {
		answer(true)
		answer(false)
	}
	if got := a.current(); got != 8 {
		t.Errorf("limit %d, want 8: the lower level sees as many 429s", got)
	}
	// Five minutes later what was learnt at 4 is stale: probe again.
	now = now.Add(staleAfter + time.Second)
	answer(true)
	if got := a.current(); got != 4 {
		t.Errorf("limit %d after stale knowledge, want a new probe at 4", got)
	}
}
